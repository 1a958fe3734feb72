import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

/// A real client losing its link for each reason a phone meets (through the FaultProxy, a server
/// that goes away, a TLS pin that does not match, the app's own stop): the state says which.
@Suite("Disconnect causes end to end", .sharedMachine)
struct DisconnectCauseEndToEndTests {
    /// Starts following `client`'s states now; `first(_:)` returns the first one (from then on) that
    /// `matches`, within 20 s.
    private struct States: Sendable {
        let states: ConnectionStateSequence

        init(_ client: LongLinkClient) { states = client.connectionStates }

        func first(
            _ what: String, where matches: @escaping @Sendable (ConnectionState) -> Bool
        ) async throws -> ConnectionState {
            let states = self.states
            return try await within(.seconds(20), what) {
                for await state in states where matches(state) { return state }
                throw ConditionTimedOut(what: "\(what) (the state stream ended)")
            }
        }

        /// The first `waitingToReconnect` after a lost link.
        func lost() async throws -> ConnectionState {
            try await first("a lost link") { $0.phase == .waitingToReconnect && $0.cause != nil }
        }
    }

    /// A server, a proxy in front of it and a client through the proxy, connected.
    private static func proxied(
        heartbeat: Duration? = nil
    ) async throws -> (RunningServer, FaultProxy, RunningClient, States) {
        let server = try await RunningServer.start(probe: Probe())
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        if let heartbeat { configuration.heartbeat = heartbeat }
        let running = RunningClient(configuration)
        let states = States(running.client)
        _ = try await states.first("connected") { $0.phase == .connected }
        return (server, proxy, running, states)
    }

    @Test("a reset says reset by peer")
    func reset() async throws {
        let (server, proxy, running, states) = try await Self.proxied()
        await proxy.apply(.reset)
        let lost = try await states.lost()
        #expect(lost.cause == .resetByPeer, "\(lost)")
        #expect("\(lost)".contains("(reset by peer) retry in"), "\(lost)")
        #expect(!"\(lost)".contains("link down"))
        // Connected again, the state carries no cause.
        let back = try await states.first("connected again") { $0.phase == .connected }
        #expect(back.cause == nil)
        // The app's own stop.
        await running.stop()
        let stopped = try await states.first("stopped") { $0.phase == .stopped }
        #expect(stopped.cause == .requestedByApp, "\(stopped)")
        #expect("\(stopped)" == "stopped (shut down)")
        await proxy.stop()
        try await server.stop()
    }

    @Test("a black hole the heartbeat finds says heartbeat timeout")
    func blackHole() async throws {
        // Long enough that a loaded machine does not declare the live link dead before the fault.
        let (server, proxy, running, states) = try await Self.proxied(heartbeat: .milliseconds(400))
        await proxy.apply(.blackHole())
        let lost = try await states.lost()
        #expect(lost.cause == .heartbeatTimeout, "\(lost)")
        #expect("\(lost)".contains("(heartbeat timeout)"), "\(lost)")
        #expect(await running.client.statistics.deadLinks >= 1)
        await running.stop()
        await proxy.stop()
        try await server.stop()
    }

    @Test("a server that stops says GoAway with its reason, then connection refused")
    func serverStopsThenRefuses() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = RunningClient(ClientConfiguration.forTests(server.endpoint))
        let states = States(running.client)
        _ = try await states.first("connected") { $0.phase == .connected }
        try await server.stop()
        let lost = try await states.lost()
        #expect(lost.cause == .goAway(.unavailable, reason: "server shutting down"), "\(lost)")
        #expect("\(lost)".contains("(GoAway UNAVAILABLE: server shutting down)"), "\(lost)")
        // Nothing listens on the port any more.
        let failed = try await states.first("a refused attempt") { $0.reason.hasPrefix("attempt failed") }
        #expect(failed.cause == .connectionRefused, "\(failed)")
        #expect("\(failed)".contains("(attempt failed: connection refused)"), "\(failed)")
        #expect(failed.error?.code == .connectionRefused)
        let waiting = try await states.first("waiting after the refusal") { $0.phase == .waitingToReconnect }
        #expect(waiting.cause == .connectionRefused, "\(waiting)")
        await running.stop()
    }

    @Test("a kick for good says kicked with the server's reason")
    func kicked() async throws {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes("alice")) }
        configuration.waitsForLoginAfterSessionEnd = true
        let running = RunningClient(configuration)
        let states = States(running.client)
        _ = try await states.first("connected") { $0.phase == .connected }
        #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
        let ended = try await states.first("the session's end") { $0.reason.hasPrefix("session ended") }
        #expect(ended.cause == .kicked(reason: "logged in elsewhere"), "\(ended)")
        #expect("\(ended)" == "waitingToReconnect (session ended: kicked: logged in elsewhere; waiting for login)")
        await running.stop()
        try await server.stop()
    }

    @Test(
        "a server key that is not pinned says TLS failure",
        .enabled(if: TestCertificates.opensslAvailable, "needs OpenSSL (tool and build)"))
    func tlsPinMismatch() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await RunningServer.start(serverConfiguration(certificates), probe: Probe())
        var configuration = clientConfiguration(certificates, .tcp(host: "localhost", port: server.address.port!))
        configuration.tls?.pinnedPublicKeys = [TLSPublicKeyPin(base64: certificates.otherServerPin)!]
        let running = RunningClient(configuration)
        let states = States(running.client)
        let failed = try await states.first("a failed TLS attempt") {
            $0.reason.hasPrefix("attempt failed") && $0.error?.code == .tlsFailure
                && ($0.error?.underlying as? TLSFailure)?.reason != .handshakeTimeout
        }
        guard case .tlsFailure(let message) = failed.cause else {
            Issue.record("not a TLS failure: \(failed)")
            return
        }
        #expect(message.contains("pinned"), "\(failed)")
        #expect("\(failed)".contains("(attempt failed: TLS failure: "), "\(failed)")
        await running.stop()
        try await server.stop()
    }

    @Test("the app's own stop and logout say requested by the app")
    func theAppsOwnRequest() async throws {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes("alice")) }
        configuration.waitsForLoginAfterSessionEnd = true
        let running = RunningClient(configuration)
        let states = States(running.client)
        _ = try await states.first("connected") { $0.phase == .connected }
        await running.client.logout()
        let ended = try await states.first("the session's end") { $0.reason.hasPrefix("session ended") }
        #expect(ended.cause == .requestedByApp, "\(ended)")
        #expect("\(ended)" == "waitingToReconnect (session ended: requested by the app; waiting for login)")
        running.client.shutdown()
        let stopped = try await states.first("stopped") { $0.phase == .stopped }
        #expect(stopped.cause == .requestedByApp, "\(stopped)")
        await running.stop()
        try await server.stop()
    }
}
