import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// "caf\u{E9}" (NFC) and "cafe\u{301}" (NFD) are two principals in a fleet too: their keys and
/// notice channels in Redis are different bytes, and no server's table merges them.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetPrincipalTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// A client of member `index` logged in as `user` with `clientID`, running in the background;
    /// `ended` gets how its run() ended (nil: without an error).
    private final class Member: Sendable {
        let client: LongLinkClient
        let ended = Mailbox<LongLinkError?>()
        let run: Task<Void, Never>

        init(_ fleet: RedisFleet, _ index: Int, as user: String, clientID: String, exclusive: Bool = false) {
            var configuration = ClientConfiguration.forRedisFleet(
                [fleet.endpoints[index]], user: user, exclusive: exclusive)
            configuration.clientID = clientID
            let client = LongLinkClient(configuration: configuration)
            let ended = self.ended
            self.client = client
            self.run = Task {
                do {
                    try await client.run()
                    ended.put(nil)
                } catch {
                    ended.put(error as? LongLinkError ?? LongLinkError(code: .unknown, message: "\(error)"))
                }
            }
        }

        func stop() async {
            client.shutdown()
            await run.value
        }
    }

    /// How many connections subscribe to `principal`'s notice channel in Redis.
    private func subscribers(_ fleet: RedisFleet, _ principal: String) async throws -> Int {
        let channel = RedisKeys(prefix: fleet.prefix).channel(principal: principal)
        let reply = try await fleet.counter.run(RedisCommand("PUBSUB", "NUMSUB", channel))
        return Int(reply.elements?.last?.int64 ?? 0)
    }

    /// Both spellings on s0, pushes produced on s1: each client receives its own pushes only. With
    /// the channels merged in s0's subscriber, the second spelling's channel was never subscribed
    /// and its pushes never noticed (the first may still come with the read after `Sync`; the
    /// second needs the notice).
    @Test func pushesProducedElsewhereReachOnlyTheirOwnSpelling() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, count: 2)
            let nfc = Member(fleet, 0, as: Self.composed, clientID: "nfc")
            let nfcPushes = nfc.client.pushes(topic: "t")
            #expect(try await nfc.client.request("server") == bytes("s0"))
            let nfd = Member(fleet, 0, as: Self.decomposed, clientID: "nfd")
            let nfdPushes = nfd.client.pushes(topic: "t")
            #expect(try await nfd.client.request("server") == bytes("s0"))
            // Each in turn, the NFC one last: a notice on its channel would wake every connection
            // s0 took for the same principal.
            for (principal, stream, expected) in [
                (Self.decomposed, nfdPushes, "first for nfd"), (Self.decomposed, nfdPushes, "second for nfd"),
                (Self.composed, nfcPushes, "for nfc"),
            ] {
                try await fleet.server(1).push(to: principal, topic: "t", payload: bytes(expected))
                let push = try await within(.seconds(20), "the push \(expected)") { () async -> Push? in
                    var iterator = stream.makeAsyncIterator()
                    return await iterator.next()
                }
                #expect(push?.payload == bytes(expected))
            }
            try await eventually("both acknowledged in Redis") {
                let composed = try? await fleet.unacknowledged(Self.composed)
                let decomposed = try? await fleet.unacknowledged(Self.decomposed)
                return composed == 0 && decomposed == 0
            }
            // Each push once, to its own principal only.
            #expect(try fleet.server(0).statistics.reliablePushesSent == 3)
            #expect(await nfc.client.statistics.pushesDelivered == 1)
            #expect(await nfd.client.statistics.pushesDelivered == 2)
            await nfc.stop()
            await nfd.stop()
            await fleet.stop()
        }
    }

    /// An exclusive login as the NFD spelling on s1 ends the NFD session of another client on s0
    /// (through the notice channel) and leaves the NFC sessions on both servers alone.
    @Test func anExclusiveLoginEndsOnlyItsOwnSpellingAcrossTheFleet() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, count: 2)
            let phone = Member(fleet, 0, as: Self.composed, clientID: "phone")
            #expect(try await phone.client.request("server") == bytes("s0"))
            let laptop = Member(fleet, 1, as: Self.composed, clientID: "laptop")
            #expect(try await laptop.client.request("server") == bytes("s1"))
            let oldTablet = Member(fleet, 0, as: Self.decomposed, clientID: "old-tablet")
            #expect(try await oldTablet.client.request("server") == bytes("s0"))
            // s0 hears both spellings' channels (two channels in Redis) before the exclusive login.
            try await eventually("s0 subscribed to both channels") {
                let composed = try? await subscribers(fleet, Self.composed)
                let decomposed = try? await subscribers(fleet, Self.decomposed)
                return composed == 2 && decomposed == 1
            }
            let tablet = Member(fleet, 1, as: Self.decomposed, clientID: "tablet", exclusive: true)
            #expect(try await tablet.client.request("server") == bytes("s1"))
            let error = try await oldTablet.ended.next(within: .seconds(10), "the old tablet's run() to end")
            #expect(error?.code == .goAway)
            #expect(try fleet.server(0).statistics.sessionsReplaced == 1)
            #expect(try fleet.server(1).statistics.sessionsReplaced == 0)
            // The other spelling's sessions are untouched, on both servers.
            #expect(try await phone.client.request("server") == bytes("s0"))
            #expect(try await laptop.client.request("server") == bytes("s1"))
            for member in [phone, laptop, oldTablet, tablet] { await member.stop() }
            await fleet.stop()
        }
    }
}
