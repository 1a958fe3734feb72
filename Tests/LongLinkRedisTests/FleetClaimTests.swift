import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// The claims of a fleet's shared de-dup window follow their owner: a stopped server's requests are
/// answered `UNKNOWN` within its lease, a live server's claims outlive their first term, and a
/// stored reply answers only the method it was stored for. Real Redis, real servers, real clients.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetClaimTests {
    /// `slow` with `name` under a 20 s deadline, from `client`; its error code, nil on success.
    private func slowCall(
        _ client: LongLinkClient, _ name: String, idempotent: Bool = false
    ) -> Task<Result<[UInt8], LongLinkError>, any Error> {
        Task {
            try await within(.seconds(25), "the call to end") { () async -> Result<[UInt8], LongLinkError> in
                do {
                    return .success(
                        try await client.request(
                            "slow", payload: bytes(name),
                            options: RequestOptions(timeout: .seconds(20), idempotent: idempotent)))
                } catch {
                    return .failure(error as? LongLinkError ?? LongLinkError(code: .internalError, message: "\(error)"))
                }
            }
        }
    }

    /// The code `call` failed with; nil when it succeeded or threw something else.
    private func code(of call: () async throws -> [UInt8]) async -> LongLinkError.Code? {
        do {
            _ = try await call()
            return nil
        } catch {
            return (error as? LongLinkError)?.code
        }
    }

    /// s0 crashes (``LongLinkTestServer/crash()``: connections reset, handlers cancelled, the lease
    /// no longer renewed, as after `kill -9` of a process) 1 s into a 3 s request with a 20 s
    /// deadline. The resend on s1 finds s0's claim, sees s0's lease end and answers `UNKNOWN`:
    /// the caller has `outcomeUnknown` within 5 s of the crash, and the request ran once.
    @Test func aCrashedServersRequestIsAnsweredOutcomeUnknownWithinFiveSeconds() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, slowFor: .seconds(3))
            try await onFirstServer(fleet, as: "cy") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "crash")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started crash on s0")
                let crashed = ContinuousClock.now
                await fleet.members[0].crash()
                let outcome = try await call.value
                #expect(ContinuousClock.now - crashed < .seconds(5))
                guard case .failure(let error) = outcome else {
                    Issue.record("the call succeeded: \(outcome)")
                    return
                }
                #expect(error.code == .outcomeUnknown)
                #expect(error.message == "the server running this request stopped; it may or may not have taken effect")
                #expect(try await client.request("server") == bytes("s1"))
                #expect(try await fleet.runs("crash") == 1)
                #expect(try fleet.server(1).statistics.outcomesUnknown == 1)
            }
            await fleet.stop()
        }
    }

    /// The same crash with a request the caller marked idempotent: the client sends it again under a
    /// new id itself, and s1 runs it.
    @Test func anIdempotentRequestWhoseServerCrashedIsSentAgainUnderANewID() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, slowFor: .seconds(3))
            try await onFirstServer(fleet, as: "ida") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "again", idempotent: true)
                #expect(try await fleet.events.next(within: .seconds(10)) == "started again on s0")
                await fleet.members[0].crash()
                #expect(try await call.value.get() == bytes("s1"))
                #expect(try await fleet.events.next(within: .seconds(1)) == "started again on s1")
                #expect(try await fleet.runs("again") == 2)
                #expect(try fleet.server(1).statistics.outcomesUnknown == 1)
            }
            await fleet.stop()
        }
    }

    /// Claims last 2.5 s at first and are renewed every 250 ms. s0 runs a 7.5 s request (three
    /// terms) and becomes unreachable meanwhile; the resend on s1 waits the whole time without
    /// taking the claim over, and replays s0's reply. The request ran once.
    @Test func aHandlerRunningThreeTimesPastItsClaimsFirstTermRunsOnce() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(
                on: redis, slowFor: .milliseconds(7500), lease: ClaimLease(interval: .milliseconds(250)),
                termLimit: .milliseconds(2500))
            try await onFirstServer(fleet, as: "lu") { (client: LongLinkClient) async throws in
                let call = slowCall(client, "long")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started long on s0")
                await fleet.cutOff(0)
                #expect(try await call.value.get() == bytes("s0"))
                #expect(try await fleet.runs("long") == 1)
                #expect(try fleet.server(1).statistics.requestsReplayed == 1)
                #expect(try fleet.server(0).statistics.claimsLost == 0)
                #expect(fleet.events.count == 0)
            }
            await fleet.stop()
        }
    }

    /// A claim taken from its owner while it runs (as a waiter marks it when the owner's lease
    /// lapsed): the owner's reply still reaches its caller, and the lost claim is counted and logged.
    @Test func aReplyWhoseClaimWasLostIsCountedAndLogged() async throws {
        try await withRedisServer { redis in
            // A `finish` slowed past the test Redis's 1.5 s command timeout by a loaded machine
            // would be counted as a store failure, not as the lost claim this test is about.
            let fleet = try await RedisFleet.start(on: redis, commandTimeout: .seconds(10))
            try await withLongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: "fay")) { client in
                let call = slowCall(client, "lost")
                #expect(try await fleet.events.next(within: .seconds(10)) == "started lost on s0")
                let pattern = RedisKeys(prefix: fleet.prefix).tag(principal: "fay") + ":d:*"
                let claims = try await fleet.counter.run(RedisCommand("KEYS", pattern)).elements ?? []
                #expect(claims.count == 1)
                for claim in claims {
                    _ = try await fleet.counter.run(RedisCommand("SET", claim.string ?? "", "U", "KEEPTTL"))
                }
                #expect(try await call.value.get() == bytes("s0"))
                let statistics = { try fleet.server(0).statistics }
                try await eventually("the lost claim is counted, or the store failed") {
                    let counted = try? statistics()
                    return (counted?.claimsLost ?? 0) + (counted?.sharedStoreFailures ?? 0) > 0
                }
                #expect(try statistics().claimsLost == 1)
                #expect(try statistics().sharedStoreFailures == 0)
                let line = try await fleet.logs.next(within: .seconds(5))
                #expect(line.contains("claim of request") && line.contains("lost"))
            }
            await fleet.stop()
        }
    }

    /// A raw connection to server `index` (no proxy), past its handshake as `clientID`.
    private func connect(_ fleet: RedisFleet, _ index: Int, as clientID: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: try await fleet.server(index).localAddress)
        _ = try await client.handshake(clientID: clientID)
        return client
    }

    /// Two connections with one client id, logged in as one principal, each on its own server: the
    /// second sends request 7 for another method than the first's, whose reply is stored in Redis.
    /// It is refused `INVALID_ARGUMENT` (as one server's window refuses it), not given that reply,
    /// and does not run; for the first's method the reply is replayed. (Logged in: requests made
    /// before a login are not de-duplicated.)
    @Test func aReplyStoredForOneMethodIsNotReplayedToAnother() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            let first = try await connect(fleet, 0, as: "twin")
            #expect(try await first.call("login", bytes("tw"), id: "login-a").payload == bytes("s0"))
            #expect(try await first.call("server", id: "7").payload == bytes("s0"))
            first.close()
            let second = try await connect(fleet, 1, as: "twin")
            #expect(try await second.call("login", bytes("tw"), id: "login-b").payload == bytes("s1"))
            let refused = try await second.call("slow", bytes("twin"), id: "7")
            #expect(refused.status?.code == .invalidArgument)
            #expect(refused.payload.isEmpty)
            #expect(try await second.call("server", id: "7").payload == bytes("s0"))
            second.close()
            #expect(try await fleet.runs("twin") == 0)
            #expect(try fleet.server(1).statistics.requestsReplayed == 1)
            await fleet.stop()
        }
    }

    /// Requests made before a login are not de-duplicated, in the shared window either: nothing a
    /// connection sends before it is bound is stored, so no reply made then (a login's token) is
    /// replayed to another connection presenting the same ids, and nothing is placed in Redis by
    /// a client-chosen client_id alone. A connection logs in as ann on s0 (request 1, the login)
    /// and calls request 2. Another presenting the same client id without login, on s1, gets
    /// neither reply: both of its requests run. A request it sent before login runs again once it
    /// logs in as ann itself; one it sends after, twice, runs once.
    @Test func repliesAreNeverReplayedAcrossALogin() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            let owner = try await connect(fleet, 0, as: "same")
            #expect(try await owner.call("login", bytes("ann"), id: "1").payload == bytes("s0"))
            #expect(try await owner.call("server", id: "2").payload == bytes("s0"))
            owner.close()
            let stranger = try await connect(fleet, 1, as: "same")
            #expect(try await stranger.call("server", id: "1").payload == bytes("s1"))
            #expect(try await stranger.call("server", id: "2").payload == bytes("s1"))
            #expect(try await stranger.call("slow", bytes("pre"), id: "3").payload == bytes("s1"))
            #expect(try await stranger.call("slow", bytes("pre"), id: "3").payload == bytes("s1"))
            #expect(try await stranger.call("login", bytes("ann"), id: "4").payload == bytes("s1"))
            #expect(try await stranger.call("slow", bytes("pre"), id: "3").payload == bytes("s1"))
            #expect(try await stranger.call("slow", bytes("post"), id: "5").payload == bytes("s1"))
            #expect(try await stranger.call("slow", bytes("post"), id: "5").payload == bytes("s1"))
            stranger.close()
            #expect(try await fleet.runs("pre") == 3)
            #expect(try await fleet.runs("post") == 1)
            #expect(try fleet.server(1).statistics.requestsReplayed == 1)
            await fleet.stop()
        }
    }
}
