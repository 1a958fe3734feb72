import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Synchronization
import Testing

@testable import LongLink

@Suite("Offline queue, login, reconnection", .sharedMachine)
struct ReconnectTests {
    @Test func requestsMadeWhileOfflineGoOutOnceTheServerIsUp() async throws {
        // Held until the server takes it over: a port chosen and released could be another test's
        // by then (this test once failed so, with "Address already in use").
        let port = try ReservedPort()
        defer { port.release() }
        let running = RunningClient(.forTests(.tcp(host: "127.0.0.1", port: port.port)))
        let client = running.client
        let calls = (0..<5).map { n in Task { try await client.request("echo", payload: bytes("queued \(n)")) } }
        try await eventually("the calls are queued") { await client.statistics.queued == 5 }
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe, on: port)
        for (n, call) in calls.enumerated() {
            #expect(text(try await call.value) == "queued \(n)")
        }
        await running.stop()
        try await server.stop()
    }

    @Test func theOfflineQueueIsBounded() async throws {
        // Refused for as long as the test holds it (bound, never listening).
        let port = try ReservedPort()
        defer { port.release() }
        var configuration = ClientConfiguration.forTests(.tcp(host: "127.0.0.1", port: port.port))
        configuration.offlineQueueLimit = 2
        let running = RunningClient(configuration)
        let client = running.client
        let first = Task { try await client.request("echo") }
        let second = Task { try await client.request("echo") }
        try await eventually("two calls are queued") { await client.statistics.queued == 2 }
        do {
            _ = try await client.request("echo")
            Issue.record("expected resource exhausted")
        } catch let error as LongLinkError {
            #expect(error.code == .resourceExhausted)
        }
        await running.stop()
        // Shutdown fails what still waits, with the shutdown code.
        for call in [first, second] {
            do {
                _ = try await call.value
                Issue.record("expected a shutdown error")
            } catch let error as LongLinkError {
                #expect(error.code == .shutdown)
            }
        }
        #expect(await client.statistics.queued == 0)
    }

    @Test func theLoginStepAndSubscriptionsRunBeforeQueuedRequests() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let loginGate = Mailbox<Void>()
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in
            _ = try await loginGate.next(within: .seconds(10), "the test to release the login")
            #expect(text(try await session.request("login", payload: bytes("alice"))) == "welcome alice")
        }
        configuration.subscriptions = [Subscription(method: "record", payload: bytes("subscription"))]
        let running = RunningClient(configuration)
        let client = running.client
        try await running.waitForPhase(.loggingIn)
        let queued = Task { try await client.request("record", payload: bytes("business")) }
        try await eventually("the call is queued behind the login") { await client.statistics.queued == 1 }
        loginGate.put(())
        #expect(try await probe.events.next() == "login alice")
        #expect(try await probe.events.next() == "record subscription")
        #expect(try await probe.events.next() == "record business")
        #expect(text(try await queued.value) == "business")
        await running.stop()
        try await server.stop()
    }

    @Test func aRejectedLoginIsTerminalAndFailsWhatWaits() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes("intruder")) }
        let client = LongLinkClient(configuration: configuration)
        let waiting = Task { try await client.request("echo") }
        do {
            try await within(.seconds(20), "run() to end") { try await client.run() }
            Issue.record("run() should throw")
        } catch let error as LongLinkError {
            #expect(error.code == .unauthenticated)
        }
        do {
            _ = try await waiting.value
            Issue.record("the queued call should fail")
        } catch let error as LongLinkError {
            #expect(error.code == .unauthenticated)
        }
        // One attempt only: no reconnect loop.
        #expect(await client.statistics.connects == 1)
        try await server.stop()
    }

    @Test func aServerRestartMidRequestResendsAndRunsItOnce() async throws {
        let probe = Probe()
        let port = try ReservedPort()
        defer { port.release() }
        var server = try await RunningServer.start(probe: probe, on: port)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clientID = "restart-test"
        // Logged in: a call made before a login is not de-duplicated, so it would fail, not go again.
        configuration.login = { session in _ = try await session.request("login", payload: bytes("ada")) }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        #expect(try await probe.events.next() == "login ada")
        let client = running.client
        let call = Task { try await client.request("gated", payload: bytes("!")) }
        #expect(try await probe.events.next() == "started gated")
        // Crash: connections reset, the handler cancelled before it counted.
        server.server.abort()
        try await server.stop()
        server = try await RunningServer.start(probe: probe, on: port)
        #expect(try await probe.events.next() == "login ada")
        #expect(try await probe.events.next() == "started gated")
        probe.gate.put(())
        #expect(text(try await call.value) == "execution 1!")
        #expect(probe.executions.load(ordering: .relaxed) == 1)
        let statistics = await client.statistics
        #expect(statistics.resends == 1)
        #expect(statistics.reconnects >= 1)
        await running.stop()
        try await server.stop()
    }

    @Test func withoutDeduplicationAWrittenCallFailsAsOutcomeUnknown() async throws {
        let probe = Probe()
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.dedupeWindow = .zero
        let server = try await RunningServer.start(serverConfiguration, probe: probe)
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let client = running.client
        let plain = Task { try await client.request("gated") }
        #expect(try await probe.events.next() == "started gated")
        let idempotent = Task {
            try await client.request("echo", payload: bytes("safe"), options: RequestOptions(idempotent: true))
        }
        #expect(text(try await idempotent.value) == "safe")
        server.server.abort()
        do {
            _ = try await plain.value
            Issue.record("expected connection lost")
        } catch let error as LongLinkError {
            #expect(error.code == .connectionLost)
        }
        await running.stop()
        try await server.stop()
    }

    @Test func goAwayWithReconnectComesBackAndWithoutStopsForGood() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes("bob")) }
        let client = LongLinkClient(configuration: configuration)
        let run = Task { try await client.run() }
        #expect(try await probe.events.next() == "login bob")
        server.server.goAwayAll(reason: "rolling restart", reconnect: true, retryAfter: .milliseconds(10))
        #expect(try await probe.events.next() == "login bob")  // logged in again on a new link
        #expect(server.server.kick(principal: "bob", reason: "logged in elsewhere") >= 0)
        do {
            try await within(.seconds(20), "run() to end") { try await run.value }
            Issue.record("run() should throw")
        } catch let error as LongLinkError {
            #expect(error.code == .goAway)
            #expect(error.message.contains("logged in elsewhere"))
        }
        try await server.stop()
    }

    @Test func networkDidChangeRetriesAtOnce() async throws {
        let clock = ManualClock()
        let port = try ReservedPort()
        defer { port.release() }
        var configuration = ClientConfiguration.forTests(.tcp(host: "127.0.0.1", port: port.port))
        configuration.clock = clock
        configuration.backoff = Backoff(initial: .seconds(60), maximum: .seconds(60), jitter: false)
        let running = RunningClient(configuration)
        try await running.waitForPhase(.waitingToReconnect)
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe, on: port)
        // The backoff says a minute; the network change says now. The clock never moves.
        running.client.networkDidChange()
        try await running.waitUntilConnected()
        await running.stop()
        try await server.stop()
    }

    @Test func gracefulShutdownLetsInFlightRequestsFinish() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let client = running.client
        let call = Task { try await client.request("gated") }
        #expect(try await probe.events.next() == "started gated")
        client.shutdown()
        do {
            _ = try await client.request("echo")
            Issue.record("new requests must fail after shutdown")
        } catch let error as LongLinkError {
            #expect(error.code == .shutdown)
        }
        probe.gate.put(())
        #expect(text(try await call.value) == "execution 1")
        let ended = await running.task.result
        #expect(throws: Never.self) { try ended.get() }
        #expect(await client.statistics.inFlight == 0)
        let pending = await client.core.pendingCount
        #expect(pending == 0)
        try await server.stop()
    }
}
