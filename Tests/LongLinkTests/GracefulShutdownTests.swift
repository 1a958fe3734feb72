import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

/// `shutdown(gracePeriod:)` drains calls in flight, and a cancellation of `run()` (what a service
/// group does after its own grace period) cuts the drain short. Time is the test's: a manual clock.
@Suite("Graceful shutdown and cancellation of run()", .sharedMachine)
struct GracefulShutdownTests {
    private struct Fixture {
        let server: RunningServer
        let probe: Probe
        let clock: ManualClock
        let running: RunningClient

        static func start() async throws -> Fixture {
            let probe = Probe()
            let server = try await RunningServer.start(probe: probe)
            let clock = ManualClock()
            var configuration = ClientConfiguration.forTests(server.endpoint)
            configuration.clock = clock
            // No heartbeat falls due while the test moves the clock by seconds.
            configuration.heartbeat = .seconds(3_600)
            let running = RunningClient(configuration)
            try await running.waitUntilConnected()
            return Fixture(server: server, probe: probe, clock: clock, running: running)
        }

        /// A call of `method`, once the server runs its handler: its outcome arrives in the mailbox
        /// (`reply <text>` or `error <code>`), which a test awaits with a bound.
        func callInFlight(_ method: String) async throws -> Mailbox<String> {
            let client = running.client
            let outcome = Mailbox<String>()
            Task {
                do {
                    let reply = try await client.request(method, options: RequestOptions(timeout: .seconds(600)))
                    outcome.put("reply \(text(reply))")
                } catch {
                    outcome.put("error \((error as? LongLinkError)?.code.description ?? "\(error)")")
                }
            }
            #expect(
                try await probe.events.next(within: .seconds(20), "the server to run \(method)").hasPrefix("started"))
            return outcome
        }

        /// Fails unless a new call is refused with the shutdown code, which also shows that the
        /// shutdown reached the client's loop (the refusal is decided there, after it).
        func expectNewCallsRefused() async {
            await #expect(throws: LongLinkError.self) {
                do {
                    _ = try await running.client.request("echo")
                } catch let error as LongLinkError {
                    #expect(error.code == .shutdown)
                    throw error
                }
            }
        }

        func expectRunReturns() async throws {
            let ended = try await running.runEnded()
            #expect(throws: Never.self) { try ended.get() }
        }
    }

    private static let shutdownError = "error \(LongLinkError.Code.shutdown)"

    @Test func aCallInFlightIsAnsweredWithinTheGracePeriod() async throws {
        let fixture = try await Fixture.start()
        let call = try await fixture.callInFlight("gated")
        fixture.running.client.shutdown(gracePeriod: .seconds(30))
        await fixture.expectNewCallsRefused()
        await fixture.clock.advance(by: .seconds(29))
        #expect(await fixture.running.client.statistics.inFlight == 1)
        fixture.probe.gate.put(())
        #expect(try await call.next(within: .seconds(20), "the gated call to end") == "reply execution 1")
        try await fixture.expectRunReturns()
        try await fixture.server.stop()
    }

    @Test func aCallStillInFlightWhenTheGracePeriodEndsFailsWithShutdown() async throws {
        let fixture = try await Fixture.start()
        let call = try await fixture.callInFlight("hang")
        fixture.running.client.shutdown(gracePeriod: .seconds(30))
        await fixture.expectNewCallsRefused()
        await fixture.clock.advance(by: .seconds(29))
        #expect(await fixture.running.client.statistics.inFlight == 1)
        await fixture.clock.advance(by: .seconds(1))
        #expect(try await call.next(within: .seconds(20), "the call to end") == Self.shutdownError)
        try await fixture.expectRunReturns()
        try await fixture.server.stop()
    }

    @Test func cancellingRunFailsCallsInFlightAtOnceAndReturns() async throws {
        let fixture = try await Fixture.start()
        let call = try await fixture.callInFlight("hang")
        fixture.running.task.cancel()
        #expect(try await call.next(within: .seconds(20), "the call to end") == Self.shutdownError)
        try await fixture.expectRunReturns()
        try await fixture.server.stop()
    }

    @Test func cancellingRunDuringAGracefulShutdownCutsTheGracePeriodShort() async throws {
        let fixture = try await Fixture.start()
        let call = try await fixture.callInFlight("hang")
        fixture.running.client.shutdown(gracePeriod: .seconds(60))
        await fixture.expectNewCallsRefused()
        // The clock never moves: only the cancellation can end the call.
        fixture.running.task.cancel()
        #expect(try await call.next(within: .seconds(20), "the call to end") == Self.shutdownError)
        try await fixture.expectRunReturns()
        try await fixture.server.stop()
    }

    @Test func aLongerGracePeriodDuringAShutdownChangesNothing() async throws {
        let fixture = try await Fixture.start()
        let call = try await fixture.callInFlight("hang")
        fixture.running.client.shutdown(gracePeriod: .seconds(10))
        fixture.running.client.shutdown(gracePeriod: .seconds(600))
        await fixture.expectNewCallsRefused()
        await fixture.clock.advance(by: .seconds(10))
        #expect(try await call.next(within: .seconds(20), "the call to end") == Self.shutdownError)
        try await fixture.expectRunReturns()
        try await fixture.server.stop()
    }
}
