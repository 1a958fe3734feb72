import FuzzKit

@testable import LongLinkTransport

/// The server's TLS session fed arbitrary bytes as a client would send them: ClientHellos and
/// records, through the real `TLSSession` over its memory BIOs, read by read.
///
/// Input: a mode byte (bit 0: the server requires a client certificate), then reads, each a
/// varint length and that many bytes. After every read the session advances its handshake, or
/// once established decrypts what it can, as the connection does. Nothing may trap or leak (ASan),
/// a failed session stays failed, and the ciphertext it answers with stays small.
@_cdecl("LLVMFuzzerTestOneInput")
public func tlsRecordFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    let context = input.bool() ? Contexts.mutual : Contexts.plain
    guard let session = try? context.makeSession(serverName: nil) else {
        check(false, "a server session could not be made")
        return 0
    }
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 10, alignment: 1)
    defer { buffer.deallocate() }
    var failed = false
    for _ in 0..<64 where !input.isAtEnd {
        session.feed(input.chunk())
        if !session.isEstablished {
            switch session.handshake() {
            case .failed: failed = true
            case .done, .wantMore: check(!failed, "a failed handshake went on")
            }
        }
        if session.isEstablished {
            read: while true {
                switch session.read(into: buffer) {
                case .bytes(let count): check(count <= buffer.count, "read more than the buffer")
                case .wantMore, .closed: break read
                case .failed:
                    failed = true
                    break read
                }
            }
        }
        check(session.outputCount < 1 << 20, "the session's answer grew to \(session.outputCount) bytes")
        _ = session.takeOutput()
        if failed { break }
    }
    return 0
}

/// One context per mode for the whole run, as a server makes one per certificate: a self-signed
/// certificate made at start, trusted as the client-certificate root in the mutual mode.
enum Contexts {
    static let identity: SelfSignedCertificate = {
        do {
            return try SelfSignedCertificate(commonName: "fuzz")
        } catch {
            fatalError("cannot make the fuzz certificate: \(error)")
        }
    }()

    static let plain = make(clients: .none)
    static let mutual = make(clients: .required(.pemBytes(identity.certificatePEM)))

    private static func make(clients: ClientCertificateVerification) -> TLSContext {
        var configuration = ServerTLSConfiguration(
            certificateChain: .bytes(identity.certificatePEM), privateKey: .bytes(identity.privateKeyPEM))
        configuration.clientCertificateVerification = clients
        do {
            return try TLSContext(server: configuration)
        } catch {
            fatalError("cannot make the fuzz TLS context: \(error)")
        }
    }
}
