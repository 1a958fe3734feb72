import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

/// The TLS session as a state machine, without sockets: two sessions whose output is fed to each other.
@Suite("TLS session without sockets", .sharedMachine, .enabled(if: opensslAvailable, "needs OpenSSL (tool and build)"))
struct TLSSessionTests {
    /// Moves each side's output to the other until neither has any.
    private func pump(_ client: TLSSession, _ server: TLSSession) {
        while client.outputCount > 0 || server.outputCount > 0 {
            for (from, to) in [(client, server), (server, client)] {
                let bytes = from.takeOutput()
                bytes.withUnsafeBytes { to.feed($0) }
            }
            _ = client.isEstablished ? .done : client.handshake()
            _ = server.isEstablished ? .done : server.handshake()
        }
    }

    private func read(_ session: TLSSession) -> [UInt8] {
        var received: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { buffer.deallocate() }
        while case .bytes(let count) = session.read(into: buffer) {
            received += buffer[0..<count]
        }
        return received
    }

    @Test("a handshake and records in memory; a key is checked against its pin")
    func inMemory() async throws {
        let certificates = try await TestCertificates.make()
        let client = try clientContext(certificates) {
            $0.pinnedPublicKeys = [TLSPublicKeyPin(base64: certificates.serverPin)!]
        }
        .makeSession(serverName: "localhost")
        let server = try serverContext(certificates).makeSession(serverName: nil)
        #expect(client.handshake() == .wantMore)
        #expect(client.outputCount > 0)
        pump(client, server)
        #expect(client.isEstablished && server.isEstablished)
        #expect(client.applicationProtocol == "longlink/1")
        let message = Array("many frames, one write".utf8)
        #expect(message.withUnsafeBytes { client.write($0) } == nil)
        pump(client, server)
        #expect(read(server) == message)
        // close_notify reads as closed.
        client.shutdown()
        pump(client, server)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 1)
        defer { buffer.deallocate() }
        #expect(server.read(into: buffer) == .closed)
    }

    @Test("plain bytes where TLS is expected are plaintextPeer")
    func plainBytes() async throws {
        let certificates = try await TestCertificates.make()
        let server = try serverContext(certificates).makeSession(serverName: nil)
        Array("GET / HTTP/1.1\r\n\r\n".utf8).withUnsafeBytes { server.feed($0) }
        guard case .failed(let failure) = server.handshake() else {
            Issue.record("the handshake did not fail")
            return
        }
        #expect(failure.reason == .plaintextPeer)
    }

    @Test("base64 round trips and rejects malformed text")
    func base64() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
        }
        #expect(Base64.encode(Array("foobar".utf8)) == "Zm9vYmFy")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.decode("Zm8") == nil)
        #expect(Base64.decode("Z=8=") == nil)
        #expect(Base64.decode("Zm!=") == nil)
    }
}
