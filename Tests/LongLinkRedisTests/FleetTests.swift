import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// One real Redis, three real servers sharing it, a real client: the fleet's promises.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetTests {
    /// The next `count` pushes of `stream`, within 20 s.
    private func take(_ count: Int, from stream: AsyncStream<Push>) async throws -> [Push] {
        try await within(.seconds(20), "\(count) pushes") {
            var iterator = stream.makeAsyncIterator()
            var pushes: [Push] = []
            while pushes.count < count, let push = await iterator.next() { pushes.append(push) }
            return pushes
        }
    }

    @Test func pushesProducedOnOtherServersArriveOnceAndInOrder() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "ann") { (client: LongLinkClient) async throws in
                let alerts = client.pushes(topic: "alerts")
                for n in 1...30 {
                    try await fleet.server(1 + n % 2).push(to: "ann", topic: "alerts", payload: bytes("alert \(n)"))
                }
                let pushes = try await take(30, from: alerts)
                #expect(pushes.map(\.seq) == Array(1...30))
                #expect(pushes.map { String(decoding: $0.payload, as: UTF8.self) } == (1...30).map { "alert \($0)" })
                try await eventually("the acks reach Redis") { (try? await fleet.unacknowledged("ann")) == 0 }
                // s0 sent each once; the others hold no connection of ann and sent nothing.
                #expect(try fleet.server(0).statistics.reliablePushesSent == 30)
                #expect(try fleet.server(1).statistics.reliablePushesSent == 0)
                #expect(await client.statistics.pushesDelivered == 30)
            }
            await fleet.stop()
        }
    }

    /// s0 becomes unreachable while it runs a non-idempotent request: the client fails over to s1
    /// and resends; s1 finds the request claimed, waits for s0's execution (which runs on as an
    /// orphan) and replays its reply. The request ran once, counted in Redis.
    @Test func aServerCutOffMidRequestIsLeftAndTheRequestRunsOnce() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "bo") { (client: LongLinkClient) async throws in
                // Bounded inside: `within` ends the call after 20 s.
                let reply = Task {
                    try await within(.seconds(20), "the reply") {
                        try await client.request(
                            "slow", payload: bytes("once"), options: RequestOptions(timeout: .seconds(10)))
                    }
                }
                #expect(try await fleet.events.next(within: .seconds(10)) == "started once on s0")
                await fleet.cutOff(0)
                #expect(try await reply.value == bytes("s0"))
                #expect(try await client.request("server") == bytes("s1"))
                #expect(try await fleet.runs("once") == 1)
                #expect(try fleet.server(1).statistics.requestsReplayed == 1)
                #expect(fleet.events.count == 0)
            }
            await fleet.stop()
        }
    }

    @Test func pushesProducedWhileTheClientIsBetweenServersArriveAfterSync() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "di") { (client: LongLinkClient) async throws in
                let alerts = client.pushes(topic: "alerts")
                for n in 1...10 { try await fleet.server(2).push(to: "di", topic: "alerts", payload: bytes("\(n)")) }
                #expect(try await take(10, from: alerts).map(\.seq) == Array(1...10))
                // Between servers: s0 unreachable, s1 refusing, pushes produced on s2 meanwhile.
                await fleet.proxies[1].refuseConnections()
                await fleet.cutOff(0)
                for n in 11...30 {
                    try await fleet.server(2).push(to: "di", topic: "alerts", payload: bytes("\(n)"))
                }
                await fleet.proxies[1].acceptConnections()
                let later = try await take(20, from: alerts)
                #expect(later.map(\.seq) == Array(11...30))
                #expect(later.map { String(decoding: $0.payload, as: UTF8.self) } == (11...30).map(String.init))
                #expect(try await client.request("server") == bytes("s1"))
                try await eventually("the acks reach Redis") { (try? await fleet.unacknowledged("di")) == 0 }
                #expect(await client.statistics.pushesDelivered == 30)
            }
            await fleet.stop()
        }
    }

    /// Redis restarts empty: while it is down, producing and requests fail `UNAVAILABLE`; once it
    /// is back the principal's pushes start a new epoch at seq 1, and the client delivers them
    /// although it took seqs 1 to 5 of the old one.
    @Test func aRedisRestartWithoutPersistenceStartsANewEpochAndNothingIsSwallowed() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "ed") { (client: LongLinkClient) async throws in
                let alerts = client.pushes(topic: "alerts")
                for n in 1...5 {
                    try await fleet.server(1).push(to: "ed", topic: "alerts", payload: bytes("old \(n)"))
                }
                #expect(try await take(5, from: alerts).map(\.seq) == Array(1...5))
                try await eventually("the acks reach Redis") { (try? await fleet.unacknowledged("ed")) == 0 }

                await redis.crash()
                await #expect {
                    try await fleet.server(1).push(to: "ed", topic: "alerts", payload: bytes("lost"))
                } throws: { error in
                    (error as? LongLinkError)?.code == .unavailable
                }
                // `server` touches no Redis itself: only the shared window can refuse it.
                let started = try fleet.server(0).statistics.handlersStarted
                await #expect {
                    _ = try await client.request("server", options: RequestOptions(timeout: .seconds(5)))
                } throws: { error in
                    (error as? LongLinkError)?.code == .unavailable
                }
                #expect(try fleet.server(0).statistics.handlersStarted == started)

                try await redis.relaunchWithoutPersistence()
                try await eventually("s1 stores pushes again") {
                    (try? await fleet.server(1).push(to: "ed", topic: "alerts", payload: bytes("new 1"))) != nil
                }
                for n in 2...5 {
                    try await fleet.server(1).push(to: "ed", topic: "alerts", payload: bytes("new \(n)"))
                }
                let fresh = try await take(5, from: alerts)
                #expect(fresh.map { String(decoding: $0.payload, as: UTF8.self) } == (1...5).map { "new \($0)" })
                #expect(fresh.map(\.seq) == Array(1...5))
            }
            await fleet.stop()
        }
    }

    /// Redis stops answering (SIGSTOP) for longer than a request's deadline: the request fails
    /// (its claim made again until the deadline: `UNAVAILABLE`, or `DEADLINE_EXCEEDED` when the
    /// deadline passes while a claim still waits for Redis) without running, a publish fails
    /// `UNAVAILABLE` within its command timeout, nothing hangs, and once Redis answers again so
    /// does the fleet.
    @Test func aPausedRedisFailsCallersWithinTheirDeadlines() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "flo") { (client: LongLinkClient) async throws in
                let started = try fleet.server(0).statistics.handlersStarted
                redis.pause()
                let start = ContinuousClock.now
                // `server` touches no Redis itself: only the shared window can refuse it.
                await #expect {
                    _ = try await client.request("server", options: RequestOptions(timeout: .seconds(4)))
                } throws: { error in
                    [.unavailable, .deadlineExceeded].contains((error as? LongLinkError)?.code)
                }
                // The call's deadline, not later.
                #expect(ContinuousClock.now - start < .seconds(8))
                #expect(try fleet.server(0).statistics.handlersStarted == started)
                let publishStart = ContinuousClock.now
                await #expect {
                    try await fleet.server(0).push(to: "flo", topic: "alerts", payload: bytes("x"))
                } throws: { error in
                    (error as? LongLinkError)?.code == .unavailable
                }
                #expect(ContinuousClock.now - publishStart < .seconds(6))
                redis.resume()
                try await eventually("requests run again") {
                    (try? await client.request("slow", payload: bytes("resumed"))) == bytes("s0")
                }
            }
            await fleet.stop()
        }
    }

    /// A login with an exclusive binding on s1 ends the principal's session of another client on
    /// s0 (`GoAway`, no reconnect: the kicked client stops with a terminal error); the same client
    /// logging in again is not kicked.
    @Test func anExclusiveLoginOnOneServerEndsTheOtherClientsSessionOnAnother() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            var firstConfiguration = ClientConfiguration.forRedisFleet(
                [fleet.endpoints[0]], user: "gus", exclusive: true)
            firstConfiguration.clientID = "phone"
            let first = LongLinkClient(configuration: firstConfiguration)
            let (firstRun, ended) = running(first)
            #expect(try await first.request("server") == bytes("s0"))

            var secondConfiguration = ClientConfiguration.forRedisFleet(
                [fleet.endpoints[1]], user: "gus", exclusive: true)
            secondConfiguration.clientID = "tablet"
            try await withLongLinkClient(configuration: secondConfiguration) { second in
                #expect(try await second.request("server") == bytes("s1"))
                let error = try await ended.next(within: .seconds(10), "the phone's run() to end")
                #expect(error?.code == .goAway)
                #expect(error?.message.contains("logged in elsewhere") == true)
                #expect(try fleet.server(0).statistics.sessionsReplaced == 1)
                // The tablet is untouched.
                #expect(try await second.request("server") == bytes("s1"))
                #expect(try fleet.server(1).statistics.sessionsReplaced == 0)
            }
            first.shutdown()
            _ = await firstRun.result
            await fleet.stop()
        }
    }
}
