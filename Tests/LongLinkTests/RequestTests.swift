@_spi(Benchmarks) import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Synchronization
import Testing

@Suite("Client requests end to end", .sharedMachine)
struct ClientRequestTests {
    @Test func aRequestSuspendsUntilItsReply() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let reply = try await withLongLinkClient(configuration: .forTests(server.endpoint)) { client in
            try await client.request("echo", payload: bytes("hello"))
        }
        #expect(text(reply) == "hello")
        try await server.stop()
    }

    @Test func typedRequestsAndErrorStatuses() async throws {
        struct EnterRoom: LongLinkRequest, Encodable {
            typealias Reply = Room
            static let method = "room.enter"
            var id: Int
        }
        struct Room: Codable, Sendable, Equatable {
            var id: Int
            var members: [String]
        }
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        try await withLongLinkClient(configuration: .forTests(server.endpoint)) { client in
            let room = try await client.send(EnterRoom(id: 42))
            #expect(room == Room(id: 42, members: ["anonymous"]))
            do {
                _ = try await client.request("fail", payload: bytes("no such room"))
                Issue.record("expected an error")
            } catch let error as LongLinkError {
                #expect(error.code == .notFound)
                #expect(error.message == "no such room")
                #expect(error.isRemote)
            }
            do {
                _ = try await client.request("nope")
                Issue.record("expected an error")
            } catch let error as LongLinkError {
                #expect(error.code == .unimplemented)
            }
        }
        try await server.stop()
    }

    @Test(arguments: deadlineStrategies)
    func aThousandConcurrentRequestsFromAHundredTasksAllResumeCorrectly(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let mismatches = try await withLongLinkClient(configuration: .forTests(server.endpoint, strategy: strategy)) {
            client in
            try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<100 {
                    group.addTask {
                        try await withThrowingTaskGroup(of: Bool.self) { inner in
                            for n in 0..<10 {
                                inner.addTask {
                                    let payload = "task \(task) request \(n)"
                                    return text(try await client.request("echo", payload: bytes(payload))) == payload
                                }
                            }
                            var bad = 0
                            for try await ok in inner where !ok { bad += 1 }
                            return bad
                        }
                    }
                }
                var total = 0
                for try await bad in group { total += bad }
                return total
            }
        }
        #expect(mismatches == 0)
        #expect(server.server.statistics.requestsReceived == 1_000)
        try await server.stop()
    }

    /// A caller whose task prefers the client's own loop registers its request in place, without
    /// a hop; every reply still reaches its own caller.
    @Test(arguments: deadlineStrategies)
    func callersOnTheClientsLoopGetTheirOwnReplies(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let loops = EventLoopGroup(loopCount: 1, name: "test-client")
        let loop = loops.loops[0]
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        configuration.eventLoopGroup = loops
        let (matched, onLoop) = try await withLongLinkClient(configuration: configuration) { client in
            try await withThrowingTaskGroup(of: (Bool, Bool).self) { tasks in
                for n in 0..<200 {
                    tasks.addTask(executorPreference: loop) {
                        let reply = try await client.request("echo", payload: bytes("call \(n)"))
                        return (text(reply) == "call \(n)", loop.inEventLoop)
                    }
                }
                var matched = 0
                var onLoop = 0
                for try await (match, on) in tasks {
                    if match { matched += 1 }
                    if on { onLoop += 1 }
                }
                return (matched, onLoop)
            }
        }
        #expect(matched == 200)
        #expect(onLoop == 200)
        await loops.shutdownAndWait()
        try await server.stop()
    }
}

@Suite("Scoped client from main-actor code", .sharedMachine)
struct MainActorUseTests {
    /// A view model on the main actor can scope a client: the closure runs in the caller's isolation.
    @MainActor
    @Test func withLongLinkClientRunsInTheCallersIsolation() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var shown: [String] = []  // main-actor state, touched inside the closure
        try await withLongLinkClient(configuration: .forTests(server.endpoint)) { client in
            shown.append(text(try await client.request("echo", payload: bytes("on the main actor"))))
        }
        #expect(shown == ["on the main actor"])
        try await server.stop()
    }
    /// The server announces that it runs 4 requests at once for a connection: a burst of 12 keeps 4
    /// written and 8 queued, and every one succeeds as replies make room (none is refused with
    /// RESOURCE_EXHAUSTED by the server).
    @Test(arguments: deadlineStrategies)
    func aBurstBeyondTheServersInFlightLimitWaitsInsteadOfFailing(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.maxInFlightPerConnection = 4
        let server = try await RunningServer.start(serverConfiguration, probe: probe)
        let running = RunningClient(.forTests(server.endpoint, strategy: strategy))
        try await running.waitUntilConnected()
        let client = running.client
        let calls = (0..<12).map { n in Task { try await client.request("gated", payload: bytes("\(n)")) } }
        try await eventually("4 written, 8 waiting") {
            let statistics = await client.statistics
            return statistics.inFlight == 4 && statistics.queued == 8
        }
        for _ in 0..<12 { probe.gate.put(()) }
        for call in calls { _ = try await call.value }
        #expect(probe.executions.load(ordering: .relaxed) == 12)
        await running.stop()
        try await server.stop()
    }
}
