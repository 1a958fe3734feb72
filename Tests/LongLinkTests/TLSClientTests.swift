import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

/// The client and the server over TLS, with certificates the `openssl` command line makes.
@Suite(
    "Client and server over TLS", .sharedMachine,
    .enabled(if: TestCertificates.opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSClientTests {
    /// Waits for a connection attempt that failed with a TLS error; returns its reason.
    private func firstTLSFailure(_ client: LongLinkClient) async throws -> TLSFailure.Reason? {
        let states = client.connectionStates
        return try await within(.seconds(20), "a TLS failure") {
            for await state in states {
                // A handshake the loaded machine did not finish in time says nothing about the peer;
                // the client retries, and the next attempt gives the verdict under test.
                if let error = state.error, error.code == .tlsFailure,
                    let reason = (error.underlying as? TLSFailure)?.reason, reason != .handshakeTimeout
                {
                    return reason
                }
            }
            return nil
        }
    }

    @Test("requests and pushes over TLS, by host name, with heartbeats")
    func requestsAndPushes() async throws {
        let certificates = try await TestCertificates.make()
        let probe = Probe()
        let server = try await RunningServer.start(serverConfiguration(certificates), probe: probe)
        var configuration = clientConfiguration(certificates, .tcp(host: "localhost", port: server.address.port!))
        configuration.heartbeat = .milliseconds(50)
        configuration.login = { session in _ = try await session.request("login", payload: Array("alice".utf8)) }
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        let reply = try await running.client.request("echo", payload: Array("over TLS".utf8))
        #expect(text(reply) == "over TLS")
        for n in 1...20 {
            try await server.server.push(to: "alice", topic: "alerts", payload: Array("alert \(n)".utf8))
        }
        let seen = try await within(.seconds(10), "20 pushes") {
            var seen: [String] = []
            for await push in alerts {
                seen.append(text(push.payload))
                if seen.count == 20 { break }
            }
            return seen
        }
        #expect(seen == (1...20).map { "alert \($0)" })
        try await eventually("every push is acknowledged") { server.server.statistics.acksReceived >= 20 }
        // A Ping and its Pong crossed the TLS link. (Not "one connection": at a 50 ms heartbeat a
        // loaded machine may declare a link dead and reconnect, which is the heartbeat working.)
        try await eventually("a heartbeat round trip") { await running.client.statistics.lastRoundTrip != nil }
        #expect(server.server.statistics.tlsHandshakeFailures == 0)
        _ = await running.stop()
        try await server.stop()
    }

    @Test("through the FaultProxy: a cut link reconnects over TLS and the request still succeeds")
    func faultProxy() async throws {
        let certificates = try await TestCertificates.make()
        let probe = Probe()
        let server = try await RunningServer.start(serverConfiguration(certificates), probe: probe)
        let proxy = FaultProxy(upstream: server.endpoint)
        let proxied = try await proxy.start()
        let running = RunningClient(
            clientConfiguration(certificates, .tcp(host: "127.0.0.1", port: proxied.port!)))
        #expect(text(try await running.client.request("echo", payload: Array("one".utf8))) == "one")
        await proxy.apply(.cut)
        // Idempotent: written before the client sees the cut, it goes again on the new link (the
        // client logs in to nothing here, and a call made before a login is not de-duplicated).
        let again = RequestOptions(idempotent: true)
        #expect(text(try await running.client.request("echo", payload: Array("two".utf8), options: again)) == "two")
        #expect(server.server.statistics.acceptedConnections >= 2)
        _ = await running.stop()
        await proxy.stop()
        try await server.stop()
    }

    @Test("an untrusted server is a tlsFailure the client reports and retries")
    func untrusted() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await RunningServer.start(serverConfiguration(certificates), probe: Probe())
        var configuration = clientConfiguration(certificates, server.endpoint)
        configuration.tls?.trustRoots = .pemFile(certificates.otherCACertificate)
        let running = RunningClient(configuration)
        #expect(try await firstTLSFailure(running.client) == .untrustedCertificate)
        _ = await running.stop()
        try await server.stop()
    }

    @Test("mutual TLS: a certified client is served, an uncertified one refused and counted")
    func mutualTLS() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await RunningServer.start(
            serverConfiguration(certificates, clients: .required(.pemFile(certificates.caCertificate))),
            probe: Probe())
        var certified = clientConfiguration(certificates, server.endpoint)
        certified.tls?.certificateChain = .file(certificates.clientCertificate)
        certified.tls?.privateKey = .file(certificates.clientKey)
        let good = RunningClient(certified)
        #expect(text(try await good.client.request("echo", payload: Array("ok".utf8))) == "ok")
        let bad = RunningClient(clientConfiguration(certificates, server.endpoint))
        let reason = try await firstTLSFailure(bad.client)
        #expect(reason == .certificateRequired || reason == .rejectedByPeer)
        try await eventually("the refusal to be counted") { server.server.statistics.tlsHandshakeFailures >= 1 }
        _ = await bad.stop()
        _ = await good.stop()
        try await server.stop()
    }

    @Test("reloadTLS: new connections get the new certificate without a restart")
    func reload() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await RunningServer.start(serverConfiguration(certificates), probe: Probe())
        // This client trusts only the other CA's certificate.
        var configuration = clientConfiguration(certificates, .tcp(host: "localhost", port: server.address.port!))
        configuration.tls?.trustRoots = .pemFile(certificates.otherCACertificate)
        configuration.tls?.pinnedPublicKeys = [TLSPublicKeyPin(base64: certificates.otherServerPin)!]
        let running = RunningClient(configuration)
        #expect(try await firstTLSFailure(running.client) == .untrustedCertificate)
        try server.server.reloadTLS(
            ServerTLSConfiguration(
                certificateChain: .file(certificates.otherServerCertificate),
                privateKey: .file(certificates.otherServerKey)))
        #expect(text(try await running.client.request("echo", payload: Array("new".utf8))) == "new")
        // A file that cannot be used leaves the current certificate in service.
        #expect(throws: LongLinkError.self) {
            try server.server.reloadTLS(
                ServerTLSConfiguration(certificateChain: .file("/nonexistent.pem"), privateKey: .file("/x.key")))
        }
        _ = await running.stop()
        try await server.stop()
    }

    @Test("plain and TLS do not mix: a TLS client at a plain server, a plain client at a TLS server")
    func mismatch() async throws {
        let certificates = try await TestCertificates.make()
        let plain = try await RunningServer.start(probe: Probe())
        let tlsClient = RunningClient(clientConfiguration(certificates, plain.endpoint))
        let reason = try await firstTLSFailure(tlsClient.client)
        #expect(reason == .plaintextPeer || reason == .closedDuringHandshake, "\(String(describing: reason))")
        _ = await tlsClient.stop()
        try await plain.stop()

        let secure = try await RunningServer.start(serverConfiguration(certificates), probe: Probe())
        let plainClient = RunningClient(ClientConfiguration.forTests(secure.endpoint))
        let states = plainClient.client.connectionStates
        let failed = try await within(.seconds(20), "a failed plain attempt") {
            for await state in states where state.error != nil { return state.error }
            return nil
        }
        #expect(failed != nil)
        try await eventually("the server to count it") { secure.server.statistics.tlsHandshakeFailures >= 1 }
        #expect(secure.server.statistics.acceptedConnections == 0)
        _ = await plainClient.stop()
        try await secure.stop()
    }

    @Test("a TLS configuration OpenSSL cannot use stops run() with invalidConfiguration")
    func badConfiguration() async throws {
        var configuration = ClientConfiguration.forTests(.tcp(host: "127.0.0.1", port: 1))
        var tls = TLSConfiguration()
        tls.trustRoots = .pemFile("/nonexistent/ca.pem")
        configuration.tls = tls
        let running = RunningClient(configuration)
        let ended = try await running.runEnded()
        #expect(throws: LongLinkError.self) { try ended.get() }
        if case .failure(let error) = ended { #expect(error.code == .invalidConfiguration) }
    }
}
