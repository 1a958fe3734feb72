import LongLinkCore
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

/// A TLS listener whose accepted connections echo what they read; failed handshakes are recorded.
final class TLSEchoServer: Sendable {
    let listener: Listener
    let server = Watched<[RecordingHandler]>([])
    let failures = Watched<[LongLinkError]>([])
    let context: Locked<TLSContext>

    init(_ context: TLSContext, group: EventLoopGroup) async throws {
        let box = Locked(context)
        self.context = box
        let handlers = server
        let failures = failures
        listener = try await Listener.bind(
            to: .tcp(host: "127.0.0.1", port: 0), group: group, tls: { box.withLock { $0 } },
            onHandshakeFailure: { error in failures.update { $0.append(error) } },
            onAccept: { connection in
                let handler = RecordingHandler(echo: true)
                connection.start(handler: handler)
                handlers.update { $0.append(handler) }
            })
    }

    var port: Int { listener.localAddress.port! }
}

/// Certificates from the `openssl` command line; the suite is skipped without it.
let opensslAvailable = TestCertificates.opensslAvailable

func serverContext(
    _ certificates: TestCertificates, certificate: String? = nil, key: String? = nil,
    clients: ClientCertificateVerification = .none, handshakeTimeout: Duration = .seconds(10)
) throws -> TLSContext {
    var configuration = ServerTLSConfiguration(
        certificateChain: .file(certificate ?? certificates.serverCertificate),
        privateKey: .file(key ?? certificates.serverKey))
    configuration.clientCertificateVerification = clients
    configuration.handshakeTimeout = handshakeTimeout
    return try TLSContext(server: configuration)
}

func clientContext(_ certificates: TestCertificates, _ adjust: (inout TLSConfiguration) -> Void = { _ in }) throws
    -> TLSContext
{
    var configuration = TLSConfiguration()
    configuration.trustRoots = .pemFile(certificates.caCertificate)
    adjust(&configuration)
    return try TLSContext(client: configuration)
}

/// The reason of a `tlsFailure` error, or nil for any other error.
func tlsReason(_ error: LongLinkError?) -> TLSFailure.Reason? {
    guard let error, error.code == .tlsFailure else { return nil }
    return (error.underlying as? TLSFailure)?.reason
}

/// Connects with TLS, expecting failure; returns the error.
func failedConnect(
    port: Int, host: String = "127.0.0.1", tls: TLSContext, timeout: Duration = .seconds(5), on loop: EventLoop
) async throws -> LongLinkError? {
    var adjusted = ConnectionOptions()
    adjusted.connectTimeout = timeout
    let options = adjusted
    return try await within(.seconds(10), "a failing TLS connect") { () -> LongLinkError? in
        do throws(LongLinkError) {
            let connection = try await Connection.connect(
                to: .tcp(host: host, port: port), options: options, tls: tls, on: loop)
            connection.close(.immediately)
            return nil
        } catch {
            return error
        }
    }
}

@Suite("TLS over the transport", .sharedMachine, .enabled(if: opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSTests {
    @Test("a verified TLS echo: 300 KB both ways, TLS 1.3, ALPN longlink/1, a clean close")
    func echo() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 2, name: "tls-echo")
        let server = try await TLSEchoServer(try serverContext(certificates), group: group)
        let loop = EventLoop(name: "tls-client")
        let connection = try await Connection.connect(
            to: .tcp(host: "localhost", port: server.port), tls: try clientContext(certificates), on: loop)
        let handler = RecordingHandler()
        let (version, alpn) = await onLoop(loop) {
            connection.start(handler: handler)
            return (connection.tlsVersion, connection.tlsApplicationProtocol)
        }
        #expect(version == "TLSv1.3")
        #expect(alpn == "longlink/1")
        let payload = patternBytes(from: 0, count: 300_000)
        for start in stride(from: 0, to: payload.count, by: 50_000) {
            try await connection.send(Array(payload[start..<start + 50_000]))
        }
        let log = try await handler.waitForBytes(payload.count)
        #expect(log.bytes == payload)
        connection.close()
        #expect(try await handler.waitForClose().closedCleanly)
        let serverHandler = try await server.server.wait("the server's handler") { !$0.isEmpty }[0]
        // The close_notify reached the server as a clean end.
        #expect(try await serverHandler.waitForClose().closedCleanly)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("verification failures have their own reasons: wrong host, untrusted CA, expired, not yet valid")
    func verificationFailures() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-verify")
        let loop = EventLoop(name: "tls-verify-client")
        let good = try await TLSEchoServer(try serverContext(certificates), group: group)
        let wrongHost = try clientContext(certificates) { $0.serverHostname = "example.com" }
        #expect(tlsReason(try await failedConnect(port: good.port, tls: wrongHost, on: loop)) == .hostnameMismatch)
        // The IP address is in the certificate; another is not.
        let wrongAddress = try clientContext(certificates) { $0.serverHostname = "10.0.0.1" }
        #expect(tlsReason(try await failedConnect(port: good.port, tls: wrongAddress, on: loop)) == .hostnameMismatch)
        // The system trust store does not know the test CA.
        let system = try TLSContext(client: TLSConfiguration())
        #expect(tlsReason(try await failedConnect(port: good.port, tls: system, on: loop)) == .untrustedCertificate)

        let cases: [(String, String, TLSFailure.Reason)] = [
            (certificates.otherServerCertificate, certificates.otherServerKey, .untrustedCertificate),
            (certificates.expiredCertificate, certificates.serverKey, .certificateExpired),
            (certificates.notYetValidCertificate, certificates.serverKey, .certificateNotYetValid),
        ]
        for (certificate, key, reason) in cases {
            let server = try await TLSEchoServer(
                try serverContext(certificates, certificate: certificate, key: key), group: group)
            let error = try await failedConnect(port: server.port, tls: try clientContext(certificates), on: loop)
            #expect(tlsReason(error) == reason, "\(certificate): \(String(describing: error))")
            // The client's alert tells the server why.
            let failures = try await server.failures.wait("the server's handshake failure") { !$0.isEmpty }
            #expect(tlsReason(failures[0]) == .rejectedByPeer)
            server.listener.close()
        }
        // The insecure mode connects to the untrusted server anyway.
        let untrusted = try await TLSEchoServer(
            try serverContext(
                certificates, certificate: certificates.otherServerCertificate, key: certificates.otherServerKey),
            group: group)
        let insecure = try clientContext(certificates) {
            $0.certificateVerification = .insecureNoVerificationForTesting
        }
        let connection = try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: untrusted.port), tls: insecure, on: loop)
        connection.close(.immediately)
        good.listener.close()
        untrusted.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("public-key pins: a matching pin connects, a mismatch fails with pinMismatch")
    func pins() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-pins")
        let loop = EventLoop(name: "tls-pins-client")
        let server = try await TLSEchoServer(try serverContext(certificates), group: group)
        let serverPin = try #require(TLSPublicKeyPin(base64: certificates.serverPin))
        let otherPin = try #require(TLSPublicKeyPin(base64: certificates.otherServerPin))
        #expect(serverPin.description == certificates.serverPin)
        // Two pins, one of them the server's: rotation.
        let matching = try clientContext(certificates) { $0.pinnedPublicKeys = [otherPin, serverPin] }
        let connection = try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: server.port), tls: matching, on: loop)
        connection.close(.immediately)
        let mismatching = try clientContext(certificates) { $0.pinnedPublicKeys = [otherPin] }
        #expect(tlsReason(try await failedConnect(port: server.port, tls: mismatching, on: loop)) == .pinMismatch)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("a plain-TCP server answering a TLS client is plaintextPeer")
    func plainServer() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-plain-server")
        let loop = EventLoop(name: "tls-plain-client")
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), group: group) { connection in
            // Answers whatever it gets with a line of text.
            final class Answer: ConnectionHandler {
                func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
                    connection.write(Array("HELLO, PLAIN TEXT\n".utf8))
                }
                func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}
            }
            connection.start(handler: Answer())
        }
        let error = try await failedConnect(
            port: listener.localAddress.port!, tls: try clientContext(certificates), on: loop)
        #expect(tlsReason(error) == .plaintextPeer, "\(String(describing: error))")
        listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("a TLS server answering a plain client fails the handshake as plaintextPeer and closes")
    func plainClient() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-plain-client")
        let loop = EventLoop(name: "plain-client")
        let server = try await TLSEchoServer(try serverContext(certificates), group: group)
        let (connection, handler) = try await connectAndStart(.tcp(host: "127.0.0.1", port: server.port), on: loop)
        try await connection.send(Array("a plain request that is not TLS at all\n".utf8))
        try await handler.waitForClose()
        let failures = try await server.failures.wait("the server's handshake failure") { !$0.isEmpty }
        #expect(tlsReason(failures[0]) == .plaintextPeer)
        // Nothing reached an echo handler.
        #expect(server.server.value.isEmpty)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("a peer that stalls mid-handshake is bounded: the client's connect timeout, the server's handshake timeout")
    func stalledHandshake() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-stall")
        let loop = EventLoop(name: "tls-stall-client")
        // Accepts and reads, never answers.
        let silent = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0), group: group) { connection in
            connection.start(handler: RecordingHandler())
        }
        let started = ContinuousClock.now
        let error = try await failedConnect(
            port: silent.localAddress.port!, tls: try clientContext(certificates), timeout: .milliseconds(300),
            on: loop)
        #expect(tlsReason(error) == .handshakeTimeout)
        // Bounded (300 ms asked), with room for a loaded machine's stalls.
        #expect(ContinuousClock.now - started < .seconds(15))

        let server = try await TLSEchoServer(
            try serverContext(certificates, handshakeTimeout: .milliseconds(200)), group: group)
        let (_, handler) = try await connectAndStart(.tcp(host: "127.0.0.1", port: server.port), on: loop)
        // The client sends nothing; the server gives up.
        try await handler.waitForClose()
        let failures = try await server.failures.wait("the server's handshake timeout") { !$0.isEmpty }
        #expect(tlsReason(failures[0]) == .handshakeTimeout)
        silent.close()
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("mutual TLS: a client certificate from the trusted CA is accepted; none, or another CA's, is refused")
    func mutualTLS() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-mtls")
        let loop = EventLoop(name: "tls-mtls-client")
        let server = try await TLSEchoServer(
            try serverContext(certificates, clients: .required(.pemFile(certificates.caCertificate))), group: group)
        let accepted = try clientContext(certificates) {
            $0.certificateChain = .file(certificates.clientCertificate)
            $0.privateKey = .file(certificates.clientKey)
        }
        let connection = try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: server.port), tls: accepted, on: loop)
        let handler = RecordingHandler()
        await onLoop(loop) { connection.start(handler: handler) }
        try await connection.send(Array("ping".utf8))
        #expect(try await handler.waitForBytes(4).bytes == Array("ping".utf8))
        connection.close()

        // In TLS 1.3 the client finishes first and hears of the refusal as an alert on its next read.
        for (chain, key, serverReason) in [
            (nil, nil, TLSFailure.Reason.certificateRequired),
            (certificates.otherClientCertificate, certificates.otherClientKey, .untrustedCertificate),
        ] {
            let client = try clientContext(certificates) {
                $0.certificateChain = chain.map { .file($0) }
                $0.privateKey = key.map { .file($0) }
            }
            let before = server.failures.value.count
            let refusedHandler = RecordingHandler()
            if let refused = try? await Connection.connect(
                to: .tcp(host: "127.0.0.1", port: server.port), tls: client, on: loop)
            {
                await onLoop(loop) { refused.start(handler: refusedHandler) }
                let closed = try await refusedHandler.waitForClose()
                #expect(
                    tlsReason(closed.closeError) == .rejectedByPeer
                        || tlsReason(closed.closeError) == .certificateRequired)
            }
            let failures = try await server.failures.wait("the server's refusal") { $0.count > before }
            #expect(tlsReason(failures[before]) == serverReason, "\(failures[before])")
        }
        #expect(server.server.value.count == 1)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("the listener asks for the context per connection: a swapped certificate serves new connections")
    func reload() async throws {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-reload")
        let loop = EventLoop(name: "tls-reload-client")
        let server = try await TLSEchoServer(try serverContext(certificates), group: group)
        let pinned = try clientContext(certificates) {
            $0.certificateVerification = .insecureNoVerificationForTesting
            $0.pinnedPublicKeys = [TLSPublicKeyPin(base64: certificates.otherServerPin)!]
        }
        #expect(tlsReason(try await failedConnect(port: server.port, tls: pinned, on: loop)) == .pinMismatch)
        let reloaded = try serverContext(
            certificates, certificate: certificates.otherServerCertificate, key: certificates.otherServerKey)
        server.context.withLock { $0 = reloaded }
        let connection = try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: server.port), tls: pinned, on: loop)
        connection.close(.immediately)
        server.listener.close()
        await loop.shutdownAndWait()
        await group.shutdownAndWait()
    }

    @Test("bad configuration is invalidConfiguration: a missing file, a key that is not the certificate's")
    func badConfiguration() async throws {
        let certificates = try await TestCertificates.make()
        #expect(throws: LongLinkError.self) {
            try serverContext(certificates, certificate: "/nonexistent/cert.pem")
        }
        #expect(throws: LongLinkError.self) {
            try serverContext(certificates, key: certificates.otherServerKey)
        }
        let garbage = #expect(throws: LongLinkError.self) {
            try clientContext(certificates) { $0.trustRoots = .pemBytes(Array("not PEM".utf8)) }
        }
        #expect(garbage?.code == .invalidConfiguration)
        let mismatched = #expect(throws: LongLinkError.self) {
            try TLSContext(
                server: ServerTLSConfiguration(
                    certificateChain: .file(certificates.serverCertificate),
                    privateKey: .file(certificates.otherServerKey)))
        }
        #expect(mismatched?.code == .invalidConfiguration)
        #expect(TLSPublicKeyPin(base64: "AAAA") == nil)
        #expect(TLSPublicKeyPin(base64: "not base64!") == nil)
    }
}
