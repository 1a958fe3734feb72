import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@Suite("Deadlines and cancellation")
struct DeadlineTests {
    @Test(arguments: deadlineStrategies)
    func aDeadlineFailsTheCallPromptlyAndTheServerStopsItsHandlerToo(strategy: DeadlineStrategy) async throws {
        let probe = ServerProbe()
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

    @Test(arguments: deadlineStrategies)
    func theRemainingBudgetTravelsInTimeoutMilliseconds(strategy: DeadlineStrategy) async throws {
        let probe = ServerProbe()
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
        let probe = ServerProbe()
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
        let probe = ServerProbe()
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
}
