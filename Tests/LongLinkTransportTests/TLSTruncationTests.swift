import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP close without `close_notify`, seen by a TLS server connection: a TLS record cut short is
/// `truncated`; an end between records stays a clean close, with the missing `close_notify` noted.
@Suite(
    "TLS truncation at the transport", .sharedMachine, .enabled(if: opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSTruncationTests {
    /// A client session over a raw blocking socket, so the test decides which ciphertext goes out.
    private struct RawClient {
        let fd: Int32
        let session: TLSSession

        /// Connects and finishes the handshake.
        static func connect(port: Int, certificates: TestCertificates) throws -> RawClient {
            let fd = socket(AF_INET, Sys.streamType, 0)
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let address = try #require(SocketAddress(ipAddress: "127.0.0.1", port: port))
            let status = address.withSockAddr { Glibc.connect(fd, $0, $1) }
            try #require(status == 0)
            let client = RawClient(
                fd: fd, session: try clientContext(certificates).makeSession(serverName: "localhost"))
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            for _ in 0..<20 {
                _ = client.session.handshake()
                client.send(client.session.takeOutput())
                if client.session.isEstablished { return client }
                let count = read(fd, &buffer, buffer.count)
                try #require(count > 0, "the server closed during the handshake")
                buffer[0..<count].withUnsafeBytes { client.session.feed($0) }
            }
            Issue.record("the handshake did not finish")
            return client
        }

        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                guard written > 0 else { return }
                offset += written
            }
        }

        /// One TLS record carrying `text`, as ciphertext.
        func record(_ text: String) -> [UInt8] {
            _ = Array(text.utf8).withUnsafeBytes { session.write($0) }
            return session.takeOutput()
        }
    }

    private func closeError(after bytes: (RawClient) -> [UInt8]) async throws -> HandlerLog {
        let certificates = try await TestCertificates.make()
        let group = EventLoopGroup(loopCount: 1, name: "tls-truncation")
        let server = try await TLSEchoServer(try serverContext(certificates), group: group)
        let client = try RawClient.connect(port: server.port, certificates: certificates)
        client.send(bytes(client))
        shutdown(client.fd, Int32(SHUT_WR))
        let handlers = try await server.server.wait("the server's connection") { $0.count == 1 }
        let log = try await handlers[0].log.wait("the server's connection to close") { $0.closeCount == 1 }
        close(client.fd)
        server.listener.close()
        await group.shutdownAndWait()
        return log
    }

    @Test("half a TLS record, then a TCP close: tlsFailure(.truncated)")
    func halfRecord() async throws {
        let log = try await closeError { client in
            let record = client.record("cut short")
            return Array(record.prefix(record.count / 2))
        }
        #expect(log.closeError?.code == .tlsFailure)
        #expect((log.closeError?.underlying as? TLSFailure)?.reason == .truncated)
    }

    @Test("a whole record, then a TCP close: the bytes arrive and the close is clean")
    func wholeRecord() async throws {
        let log = try await closeError { $0.record("complete") }
        #expect(log.bytes == Array("complete".utf8))
        #expect(log.closeError == nil)
    }
}
