import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@Suite("Deadlines and cancellation", .sharedMachine)
struct DeadlineTests {
    @Test(arguments: deadlineStrategies)
    func aDeadlineFailsTheCallPromptlyAndTheServerStopsItsHandlerToo(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = RunningClient(.forTests(server.endpoint, strategy: strategy))
        try await running.waitUntilConnected()
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await running.client.request("hang", options: RequestOptions(timeout: .milliseconds(500)))
            Issue.record("expected a deadline error")
        } catch let error as LongLinkError {
            // The client's timer or the server's timeout_ms budget: both end the call on time.
            #expect(error.code == .deadlineExceeded)
        }
        #expect(clock.now - start >= .milliseconds(500))
        // On a machine loaded enough to take half a second to hand the call to the loop, the deadline
        // passes before the request is written: then the server never hears of it, which is right too.
        if await running.client.statistics.requestsSent > 0 {
            let started = try await probe.events.next()
            #expect(started.hasPrefix("started"))
            // The budget in timeout_ms ran out on the server: the handler stops without a Cancel.
            #expect(try await probe.events.next().hasPrefix("cancelled"))
            let serverStatistics = server.server.statistics
            #expect(serverStatistics.requestsTimedOut == 1)
            #expect(serverStatistics.requestsCancelled == 0)
        }
        let statistics = await running.client.statistics
        #expect(statistics.timeouts == 1)
        #expect(statistics.inFlight == 0)
        await running.stop()
        try await server.stop()
    }

    /// A timeout of centuries is a valid budget: the call is answered, nothing overflows.
    @Test func aTimeoutOfCenturiesWorks() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let reply = try await running.client.request(
            "echo", payload: bytes("far"), options: RequestOptions(timeout: .seconds(Int64.max / 4)))
        #expect(reply == bytes("far"))
        await running.stop()
        try await server.stop()
    }

    /// A call the server's `DEADLINE_EXCEEDED` fails is a timeout in the statistics, and its
    /// error says it came from the server.
    @Test func aServerDeadlineReplyIsATimeout() async throws {
        let server = try await RunningServer.start(.testing, probe: Probe())
        let running = RunningClient(ClientConfiguration.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let client = running.client
        await #expect(throws: LongLinkError.self) {
            _ = try await client.request("expire", options: RequestOptions(timeout: .seconds(60)))
        }
        do {
            _ = try await client.request("expire", options: RequestOptions(timeout: .seconds(60)))
        } catch let error as LongLinkError {
            #expect(error.code == .deadlineExceeded)
            #expect(error.isRemote)
        }
        let statistics = await client.statistics
        #expect(statistics.timeouts == 2)
        await running.stop()
        try await server.stop()
    }

    /// Thousands of calls expire at once: every caller gets exactly one deadline error, and the
    /// counters agree.
    @Test(arguments: deadlineStrategies)
    func aMassExpiryResumesEveryCallerOnce(strategy: DeadlineStrategy) async throws {
        let (server, clock, running) = try await startHoldingEveryCall(strategy)
        let client = running.client
        let count = 5_000
        let outcomes = Task {
            await withTaskGroup(of: LongLinkError.Code?.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        do {
                            _ = try await client.request("hang", options: RequestOptions(timeout: .seconds(60)))
                            return nil
                        } catch {
                            return (error as? LongLinkError)?.code
                        }
                    }
                }
                var codes: [LongLinkError.Code?] = []
                for await code in group { codes.append(code) }
                return codes
            }
        }
        try await eventually("every call is written") { await client.statistics.inFlight == count }
        await clock.advance(by: .seconds(61))
        let codes = try await within(.seconds(30), "every caller resumes") { await outcomes.value }
        #expect(codes.count == count)
        #expect(
            codes.allSatisfy { $0 == .deadlineExceeded },
            "\(Dictionary(grouping: codes.map { "\($0.map { "\($0)" } ?? "ok")" }, by: { $0 }).mapValues(\.count))")
        let statistics = await client.statistics
        #expect(statistics.timeouts == count)
        #expect(statistics.inFlight == 0)
        await running.stop()
        try await server.stop()
    }

    /// More calls than one slice of the deadline index's expiry share one deadline: the clock
    /// moved exactly to that deadline fails every one of them (the slices after the first come at
    /// the same instant, not later).
    @Test(arguments: deadlineStrategies)
    func callsBeyondOneExpirySliceAllFailAtTheirDeadline(strategy: DeadlineStrategy) async throws {
        let (server, clock, running) = try await startHoldingEveryCall(strategy)
        let client = running.client
        let count = 3_000
        let timeout = Duration.seconds(60)
        let outcomes = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        do {
                            _ = try await client.request("hang", options: RequestOptions(timeout: timeout))
                            return false
                        } catch {
                            return (error as? LongLinkError)?.code == .deadlineExceeded
                        }
                    }
                }
                var timedOut = 0
                for await outcome in group where outcome { timedOut += 1 }
                return timedOut
            }
        }
        try await eventually("every call is written") { await client.statistics.inFlight == count }
        // Every deadline lies within the time the calls took to be made: at most `timeout` from now.
        await clock.advance(by: timeout)
        try await eventually("every call failed", within: .seconds(30)) { await client.statistics.inFlight == 0 }
        #expect(await outcomes.value == count)
        await running.stop()
        try await server.stop()
    }

    @Test(arguments: deadlineStrategies)
    func theRemainingBudgetTravelsInTimeoutMilliseconds(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        configuration.clock = ManualClock()  // never advances: only the server's budget can end the call
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        do {
            _ = try await running.client.request("hang", options: RequestOptions(timeout: .milliseconds(50)))
            Issue.record("expected a deadline error")
        } catch let error as LongLinkError {
            // The server gave up after timeout_ms and said so.
            #expect(error.code == .deadlineExceeded)
            #expect(error.isRemote)
        }
        await running.stop()
        try await server.stop()
    }

    @Test(arguments: deadlineStrategies)
    func cancellingTheCallerThrowsCancellationAndCancelsOnTheServer(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = RunningClient(.forTests(server.endpoint, strategy: strategy))
        try await running.waitUntilConnected()
        let client = running.client
        let call = Task { try await client.request("hang") }
        #expect(try await probe.events.next().hasPrefix("started"))
        call.cancel()
        let result = await call.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(try await probe.events.next().hasPrefix("cancelled"))
        let statistics = await client.statistics
        #expect(statistics.cancellations == 1)
        #expect(statistics.inFlight == 0)
        await running.stop()
        try await server.stop()
    }

    @Test(arguments: deadlineStrategies)
    func aCallerCancelledBeforeItsRequestIsRegisteredFailsAtOnce(strategy: DeadlineStrategy) async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = RunningClient(.forTests(server.endpoint, strategy: strategy))
        try await running.waitUntilConnected()
        let client = running.client
        let call = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await client.request("record", payload: bytes("never"))
        }
        let result = await call.result
        #expect(throws: (any Error).self) { try result.get() }
        // Nothing reached the server.
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        #expect(probe.events.count == 0)
        #expect(await client.statistics.inFlight == 0)
        await running.stop()
        try await server.stop()
    }

    /// A server that holds up to 10,000 calls at once and a connected client on a manual clock.
    private func startHoldingEveryCall(
        _ strategy: DeadlineStrategy
    ) async throws -> (RunningServer, ManualClock, RunningClient) {
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.maxInFlightPerConnection = 10_000  // the server must hold every call
        let server = try await RunningServer.start(serverConfiguration, probe: Probe())
        let clock = ManualClock()
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        configuration.clock = clock
        // Longer than any step of the clock here: the link must outlive the jump (a link declared
        // dead fails its calls made before a login with connectionLost before they expire).
        configuration.heartbeat = .seconds(120)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        return (server, clock, running)
    }
}
