import Foundation
import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What TLS promises beyond the handshake: handshakes count against the connection limit, a cut
/// message is reported as truncation, and a handler sees the client's certificate.
@Suite(
    "TLS handshake limits, truncation and client certificates",
    .sharedMachine,
    .enabled(if: TestCertificates.opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSHardeningTests {
    @Test("a handler sees the mTLS client's certificate subject and pin; nil without one")
    func clientCertificateInContext() async throws {
        let certificates = try await TestCertificates.make()
        let mutual = try await RunningServer.start(
            serverConfiguration(certificates, clients: .required(.pemFile(certificates.caCertificate))),
            probe: Probe())
        var certified = clientConfiguration(certificates, mutual.endpoint)
        certified.tls?.certificateChain = .file(certificates.clientCertificate)
        certified.tls?.privateKey = .file(certificates.clientKey)
        let client = RunningClient(certified)
        let seen = text(try await client.client.request("peer"))
        #expect(seen == "CN=test client \(certificates.clientPin)")
        _ = await client.stop()
        try await mutual.stop()

        let plain = try await RunningServer.start(serverConfiguration(certificates), probe: Probe())
        let anonymous = RunningClient(clientConfiguration(certificates, plain.endpoint))
        #expect(text(try await anonymous.client.request("peer")) == "none none")
        _ = await anonymous.stop()
        try await plain.stop()
    }

    /// A server that welcomes, then answers `cut` with half a response frame and `drop` with
    /// nothing, each followed by a TCP close without `close_notify`.
    private func cuttingServer(_ certificates: TestCertificates) async throws -> ScriptedServer {
        let tls = try TLSContext(
            server: ServerTLSConfiguration(
                certificateChain: .file(certificates.serverCertificate), privateKey: .file(certificates.serverKey)))
        return try await ScriptedServer.start(tls: tls) { frame, peer in
            switch frame {
            case .hello:
                peer.welcome()
            case .request(let request):
                if request.method == "cut" {
                    var bytes: [UInt8] = []
                    let payload = [UInt8](repeating: 7, count: 64)
                    Frame.response(Frame.Response(requestID: request.requestID, payload: payload))
                        .encodeDelimited(into: &bytes)
                    peer.connection.write(Array(bytes.prefix(bytes.count / 2)))
                }
                peer.connection.flush()
                peer.connection.close(.immediately)
            default:
                break
            }
        }
    }

    /// The error of the first time the client's link ends after `method` is sent.
    private func linkEnd(after method: String, at server: ScriptedServer) async throws -> LongLinkError? {
        let certificates = try await TestCertificates.make()
        let running = RunningClient(clientConfiguration(certificates, server.endpoint))
        try await running.waitUntilConnected()
        let states = running.client.connectionStates
        let ended = Task {
            for await state in states where state.phase == .waitingToReconnect { return state.error }
            return nil
        }
        let call = Task { try await running.client.request(method) }
        let error = try await within(.seconds(20), "the link to end") { await ended.value }
        call.cancel()
        _ = await running.stop()
        return error
    }

    @Test("a TCP close without close_notify mid-frame is tlsFailure(.truncated); between frames, a clean close")
    func truncation() async throws {
        let certificates = try await TestCertificates.make()
        let server = try await cuttingServer(certificates)
        let cut = try await linkEnd(after: "cut", at: server)
        #expect(cut?.code == .tlsFailure)
        #expect((cut?.underlying as? TLSFailure)?.reason == .truncated)
        let dropped = try await linkEnd(after: "drop", at: server)
        #expect(dropped == nil, "\(String(describing: dropped))")
        server.stop()
    }

    /// Silent sockets that never complete a TLS handshake hold at most `maxConnections` places,
    /// and give them back when they close, so that a real client is not starved. What frees a
    /// place is the close itself, not the handshake timeout: that is set far beyond every wait
    /// here, so a place held until it fires never comes back within the test, however loaded the
    /// machine. The real client is then measured by what it went through, not by the wall clock:
    /// it gets in at its first attempt, with no connection refused.
    @Test("5,000 silent TLS sockets against maxConnections 100: bounded, places back on close, a client in at once")
    func silentSocketFlood() async throws {
        let certificates = try await TestCertificates.make()
        var configuration = serverConfiguration(certificates)
        configuration.maxConnections = 100
        configuration.tls?.handshakeTimeout = .seconds(3_600)
        let server = try await RunningServer.start(configuration, probe: Probe())
        let port = try #require(server.address.port)
        let limit = raiseDescriptorLimit()
        let baseline = openDescriptorCount()
        // Both ends of every socket live in this process while the server has not closed its end.
        let count = min(5_000, (limit - baseline - 500) / 2)
        #expect(count >= 1_000, "descriptor limit \(limit) leaves room for \(count) sockets only")
        var sockets: [Int32] = []
        var peakPending = 0
        var peakServerSockets = 0
        while sockets.count < count {
            sockets.append(try silentSocket(port: port))
            if sockets.count % 100 == 0 {
                peakPending = max(peakPending, server.server.statistics.tlsHandshakesPending)
                peakServerSockets = max(peakServerSockets, serverSocketCount(port: port))
            }
        }
        try await eventually("the server to account for every socket") {
            let statistics = server.server.statistics
            return statistics.rejectedConnections + statistics.tlsHandshakesPending >= count
        }
        peakPending = max(peakPending, server.server.statistics.tlsHandshakesPending)
        peakServerSockets = max(peakServerSockets, serverSocketCount(port: port))
        #expect(peakPending <= 100)
        // The server's sockets: the pending handshakes and the listener (a refused socket is closed
        // where it is accepted); one per silent socket without the limit.
        #expect(peakServerSockets <= 110, "the server held \(peakServerSockets) sockets on its port")
        sockets.forEach { _ = close($0) }
        // A bound for a hung test only: without the release on close, the places would come back
        // after the handshake timeout, an hour from now.
        try await eventually("the places to come back once the sockets closed", within: .seconds(60)) {
            server.server.statistics.tlsHandshakesPending == 0
        }
        let refused = server.server.statistics.rejectedConnections
        var clientConfiguration = clientConfiguration(certificates, server.endpoint)
        // However slow its handshake on a loaded machine, its first attempt must not time out.
        clientConfiguration.connectTimeout = .seconds(60)
        clientConfiguration.defaultTimeout = .seconds(60)
        let client = RunningClient(clientConfiguration)
        #expect(text(try await client.client.request("echo", payload: bytes("hello"))) == "hello")
        let statistics = await client.client.statistics
        _ = await client.stop()
        #expect(statistics.connects == 1 && statistics.failedConnects == 0, "\(statistics)")
        #expect(server.server.statistics.rejectedConnections == refused, "the real client was refused")
        try await server.stop()
    }

    @Test("maxPendingHandshakes must be at least 1")
    func pendingHandshakesValidated() {
        var configuration = ServerConfiguration()
        configuration.maxPendingHandshakes = 0
        #expect(throws: LongLinkError.self) { try configuration.validate() }
        configuration.maxPendingHandshakes = 1
        #expect(throws: Never.self) { try configuration.validate() }
    }

    /// Raises the soft descriptor limit to the hard one; returns the soft limit now in force.
    private func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1_024 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// The descriptors of this process whose local port is `port`: the server's listener and the
    /// sockets it accepted (the silent sockets' ends have ephemeral local ports).
    private func serverSocketCount(port: Int) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.compactMap { Int32($0) }.count { fd in
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let status = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            return status == 0 && address.sin_family == sa_family_t(AF_INET)
                && UInt16(bigEndian: address.sin_port) == UInt16(port)
        }
    }

    private func openDescriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    /// A blocking TCP connection to the loopback port that never sends a byte.
    private func silentSocket(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LongLinkError(code: .ioFailure, message: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard status == 0 else {
            let code = errno
            _ = close(fd)
            throw LongLinkError(code: .ioFailure, message: "connect: errno \(code)")
        }
        return fd
    }
}
