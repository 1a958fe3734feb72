import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkTransport

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    import COpenSSL

    /// Renegotiation is refused: a TLS 1.2 server made with OpenSSL directly asks LongLink's client
    /// session to renegotiate, in memory, and the renegotiation never completes.
    @Suite(
        "TLS renegotiation is refused", .sharedMachine, .enabled(if: opensslAvailable, "needs OpenSSL (tool and build)")
    )
    struct TLSRenegotiationTests {
        /// A TLS 1.2 server `SSL` between two memory BIOs, outside LongLink's TLS code.
        private final class RawServer {
            let context: OpaquePointer
            let ssl: OpaquePointer
            let input: OpaquePointer
            let output: OpaquePointer

            init(_ certificates: TestCertificates) throws {
                context = try #require(SSL_CTX_new(TLS_server_method()))
                _ = SSL_CTX_ctrl(context, SSL_CTRL_SET_MAX_PROTO_VERSION, Int(TLS1_2_VERSION), nil)
                #expect(SSL_CTX_use_certificate_file(context, certificates.serverCertificate, SSL_FILETYPE_PEM) == 1)
                #expect(SSL_CTX_use_PrivateKey_file(context, certificates.serverKey, SSL_FILETYPE_PEM) == 1)
                ssl = try #require(SSL_new(context))
                input = try #require(BIO_new(BIO_s_mem()))
                output = try #require(BIO_new(BIO_s_mem()))
                SSL_set_bio(ssl, input, output)
                SSL_set_accept_state(ssl)
            }

            deinit {
                SSL_free(ssl)
                SSL_CTX_free(context)
            }

            func takeOutput() -> [UInt8] {
                var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(output)))
                let count = BIO_read(output, &bytes, Int32(bytes.count))
                return Array(bytes.prefix(Int(max(0, count))))
            }

            func feed(_ bytes: [UInt8]) {
                guard !bytes.isEmpty else { return }
                _ = BIO_write(input, bytes, Int32(bytes.count))
            }
        }

        /// Moves bytes both ways until neither side has any; the server advances with `step`.
        private func pump(_ client: TLSSession, _ server: RawServer, step: () -> Void) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
            defer { buffer.deallocate() }
            for _ in 0..<20 {
                let toServer = client.takeOutput()
                server.feed(toServer)
                step()
                let toClient = server.takeOutput()
                toClient.withUnsafeBytes { client.feed($0) }
                if client.isEstablished {
                    while case .bytes = client.read(into: buffer) {}
                } else {
                    _ = client.handshake()
                }
                if toServer.isEmpty && toClient.isEmpty && client.outputCount == 0 { return }
            }
        }

        @Test("a server's renegotiation request is refused by the client")
        func clientRefuses() async throws {
            let certificates = try await TestCertificates.make()
            let server = try RawServer(certificates)
            let client = try clientContext(certificates).makeSession(serverName: "localhost")
            var handshake: Int32 = 0
            pump(client, server) { handshake = SSL_do_handshake(server.ssl) }
            #expect(handshake == 1 && client.isEstablished)
            #expect(client.protocolVersion == "TLSv1.2")
            #expect(SSL_renegotiate(server.ssl) == 1)
            // The server writes its HelloRequest, then reads what the client answers: a ClientHello
            // would carry the renegotiation on inside SSL_read.
            #expect(SSL_do_handshake(server.ssl) == 1)
            var scratch = [UInt8](repeating: 0, count: 4096)
            pump(client, server) { _ = SSL_read(server.ssl, &scratch, Int32(scratch.count)) }
            #expect(SSL_renegotiate_pending(server.ssl) == 1, "the renegotiation completed")
        }
    }
#endif
