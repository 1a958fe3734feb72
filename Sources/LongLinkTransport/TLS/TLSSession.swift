import LongLinkCore

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    internal import COpenSSL
#endif

/// The TLS state of one connection: an OpenSSL `SSL` between two memory BIOs, so that OpenSSL never
/// touches the socket. The connection feeds it the ciphertext it read, and takes from it the
/// ciphertext to write; plaintext goes in with ``write(_:)`` and out with ``read(into:)``. No call
/// blocks. Confined to the connection's loop; tested without sockets by pumping two sessions'
/// output into each other.
final class TLSSession {
    enum HandshakeStep: Equatable {
        case done
        /// Needs more bytes from the peer (after the caller has written ``takeOutput()``).
        case wantMore
        case failed(TLSFailure)
    }

    enum ReadStep: Equatable {
        case bytes(Int)
        /// Nothing decrypted until more bytes arrive.
        case wantMore
        /// The peer sent `close_notify`.
        case closed
        case failed(TLSFailure)
    }

    let isClient: Bool
    /// True once the handshake finished and the pins (if any) matched.
    private(set) var isEstablished = false
    /// The first byte the peer sent, to tell a plain-TCP peer from a TLS one.
    private var firstPeerByte: UInt8?

    #if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
        private let context: TLSContext
        private let ssl: OpaquePointer
        /// Ciphertext from the peer, for OpenSSL to read (owned by `ssl`).
        private let input: OpaquePointer
        /// Ciphertext OpenSSL produced, for the socket (owned by `ssl`).
        private let output: OpaquePointer

        init(context: TLSContext, serverName: String?) throws(LongLinkError) {
            self.context = context
            isClient = context.isClient
            guard let ssl = SSL_new(context.context), let input = BIO_new(BIO_s_mem()),
                let output = BIO_new(BIO_s_mem())
            else {
                throw TLSContext.configurationError("cannot create a TLS session")
            }
            self.ssl = ssl
            self.input = input
            self.output = output
            SSL_set_bio(ssl, input, output)
            guard isClient else {
                SSL_set_accept_state(ssl)
                return
            }
            SSL_set_connect_state(ssl)
            guard let serverName, !serverName.isEmpty else {
                if context.verifiesPeer {
                    throw LongLinkError(
                        code: .invalidConfiguration,
                        message: "TLS verification needs a server name: set serverHostname for a Unix socket")
                }
                return
            }
            if SocketAddress(ipAddress: serverName, port: 0) != nil {
                // An address is checked against the certificate's IP entries; SNI carries names only.
                if context.verifiesPeer { X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) }
            } else {
                _ = longlink_SSL_set_tlsext_host_name(ssl, serverName)
                if context.verifiesPeer {
                    SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                    SSL_set1_host(ssl, serverName)
                }
            }
        }

        deinit {
            SSL_free(ssl)
        }

        /// Hands OpenSSL ciphertext read from the socket.
        func feed(_ bytes: UnsafeRawBufferPointer) {
            guard !bytes.isEmpty else { return }
            if firstPeerByte == nil { firstPeerByte = bytes[0] }
            BIO_write(input, bytes.baseAddress, Int32(bytes.count))
        }

        /// Advances the handshake with what has been fed so far.
        func handshake() -> HandshakeStep {
            ERR_clear_error()
            let status = SSL_do_handshake(ssl)
            if status == 1 {
                if let mismatch = pinMismatch() { return .failed(mismatch) }
                isEstablished = true
                return .done
            }
            let code = SSL_get_error(ssl, status)
            if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE {
                return .wantMore
            }
            return .failed(failure())
        }

        /// Decrypts into `buffer`.
        func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadStep {
            ERR_clear_error()
            let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
            if count > 0 { return .bytes(Int(count)) }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return .wantMore
            case SSL_ERROR_ZERO_RETURN: return .closed
            default: return .failed(failure())
            }
        }

        /// Encrypts all of `bytes` (the output BIO grows as needed); nil, or why it failed.
        func write(_ bytes: UnsafeRawBufferPointer) -> TLSFailure? {
            guard !bytes.isEmpty else { return nil }
            ERR_clear_error()
            let count = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
            return count == bytes.count ? nil : failure()
        }

        /// Queues `close_notify`.
        func shutdown() {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
        }

        /// Ciphertext waiting for the socket.
        var outputCount: Int { Int(BIO_ctrl_pending(output)) }

        /// Takes the ciphertext waiting for the socket.
        func takeOutput() -> [UInt8] {
            let count = outputCount
            guard count > 0 else { return [] }
            return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = Int(max(0, BIO_read(output, buffer.baseAddress, Int32(count))))
            }
        }

        /// True when fed bytes or decrypted plaintext wait for ``read(into:)``.
        var hasBufferedInput: Bool {
            SSL_pending(ssl) > 0 || BIO_ctrl_pending(input) > 0
        }

        /// True when part of a record waits for the rest (OpenSSL moves what it has read of a record
        /// out of the input BIO into its own buffer, which only `SSL_has_pending` sees).
        var holdsPartialRecord: Bool {
            SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(input) > 0
        }

        /// The negotiated ALPN protocol, if any.
        var applicationProtocol: String? {
            var data: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &data, &length)
            guard let data, length > 0 else { return nil }
            return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
        }

        /// The negotiated version, for example `TLSv1.3`.
        var protocolVersion: String {
            String(cString: SSL_get_version(ssl))
        }

        /// The subject (RFC 2253) and key pin of the certificate the peer presented, nil when it
        /// presented none (a server's client without a certificate).
        var peerCertificate: (subject: String, pin: TLSPublicKeyPin)? {
            guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
            defer { X509_free(certificate) }
            guard let pin = TLSPublicKeyPin.of(certificate: certificate) else { return nil }
            var buffer = [CChar](repeating: 0, count: 1024)
            let length = Int(longlink_X509_subject(certificate, &buffer, Int32(buffer.count)))
            let bytes = buffer[0..<max(0, length)].map { UInt8(bitPattern: $0) }
            return (String(decoding: bytes, as: UTF8.self), pin)
        }

        /// Nil when no pins are set or one of the checked keys is pinned; otherwise the failure,
        /// naming the pins and the keys seen.
        private func pinMismatch() -> TLSFailure? {
            guard !context.pins.isEmpty else { return nil }
            let seen = peerKeyPins()
            guard !seen.contains(where: context.pins.contains) else { return nil }
            let expected = context.pins.map(\.description).joined(separator: ", ")
            let keys = seen.map(\.description).joined(separator: ", ")
            let checked = context.verifiesPeer ? "the verified chain's keys" : "the leaf's key"
            return TLSFailure(reason: .pinMismatch, detail: "pinned [\(expected)]; \(checked): [\(keys)]")
        }

        /// The pins of the keys checked: with verification, each certificate of the verified chain
        /// (leaf to trust anchor), never one the peer merely appended; without, the leaf's only, as
        /// nothing ties the other certificates sent to the key that signed the handshake.
        private func peerKeyPins() -> [TLSPublicKeyPin] {
            if context.verifiesPeer {
                return (0..<longlink_verified_chain_count(ssl)).compactMap { index in
                    longlink_verified_chain_at(ssl, index).flatMap { TLSPublicKeyPin.of(certificate: $0) }
                }
            }
            guard let leaf = SSL_get1_peer_certificate(ssl) else { return [] }
            defer { X509_free(leaf) }
            return TLSPublicKeyPin.of(certificate: leaf).map { [$0] } ?? []
        }

        /// Why the last OpenSSL call failed, in the terms of ``TLSFailure/Reason``.
        private func failure() -> TLSFailure {
            if let firstPeerByte, firstPeerByte != 0x16, firstPeerByte != 0x15 {
                OpenSSLErrors.drain()
                return TLSFailure(
                    reason: .plaintextPeer,
                    detail: "the peer sent bytes that are not TLS (first byte 0x\(String(firstPeerByte, radix: 16)))")
            }
            let verification = SSL_get_verify_result(ssl)
            if context.verifiesPeer && verification != X509_V_OK {
                OpenSSLErrors.drain()
                let detail = String(cString: X509_verify_cert_error_string(verification))
                return TLSFailure(reason: Self.reason(verification: Int32(verification)), detail: detail)
            }
            let reason = OpenSSLErrors.firstReason()
            let detail = OpenSSLErrors.drain()
            return TLSFailure(reason: Self.reason(openSSL: reason), detail: detail)
        }

        private static func reason(verification: Int32) -> TLSFailure.Reason {
            switch verification {
            case X509_V_ERR_CERT_HAS_EXPIRED: .certificateExpired
            case X509_V_ERR_CERT_NOT_YET_VALID: .certificateNotYetValid
            case X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH: .hostnameMismatch
            case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
                X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
                .untrustedCertificate
            default: .invalidCertificate
            }
        }

        private static func reason(openSSL reason: Int32) -> TLSFailure.Reason {
            switch reason {
            case SSL_R_WRONG_VERSION_NUMBER, SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST,
                SSL_R_PACKET_LENGTH_TOO_LONG:
                .plaintextPeer
            case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE, SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
                .certificateRequired
            case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION,
                SSL_R_NO_APPLICATION_PROTOCOL, SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL:
                .protocolMismatch
            case let alert where alert > SSL_AD_REASON_OFFSET:
                // The peer sent a fatal alert: OpenSSL's reason is the alert plus the offset.
                .rejectedByPeer
            default: .handshakeFailed
            }
        }
    #else
        init(context: TLSContext, serverName: String?) throws(LongLinkError) {
            throw .tls(.unavailable, "TLS is not available on this platform yet")
        }

        func feed(_ bytes: UnsafeRawBufferPointer) {}
        func handshake() -> HandshakeStep { .failed(TLSFailure(reason: .unavailable, detail: "")) }
        func read(into buffer: UnsafeMutableRawBufferPointer) -> ReadStep {
            .failed(TLSFailure(reason: .unavailable, detail: ""))
        }
        func write(_ bytes: UnsafeRawBufferPointer) -> TLSFailure? { TLSFailure(reason: .unavailable, detail: "") }
        func shutdown() {}
        var outputCount: Int { 0 }
        func takeOutput() -> [UInt8] { [] }
        var hasBufferedInput: Bool { false }
        var holdsPartialRecord: Bool { false }
        var applicationProtocol: String? { nil }
        var protocolVersion: String { "" }
        var peerCertificate: (subject: String, pin: TLSPublicKeyPin)? { nil }
    #endif
}

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    extension TLSPublicKeyPin {
        /// The pin of `certificate`'s public key (an `X509 *`).
        static func of(certificate: OpaquePointer) -> TLSPublicKeyPin? {
            guard let key = X509_get_X509_PUBKEY(certificate) else { return nil }
            let length = i2d_X509_PUBKEY(key, nil)
            guard length > 0 else { return nil }
            var der = [UInt8](repeating: 0, count: Int(length))
            let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var cursor = buffer.baseAddress
                return i2d_X509_PUBKEY(key, &cursor)
            }
            guard written == length else { return nil }
            var digest = [UInt8](repeating: 0, count: 32)
            var digestLength: UInt32 = 0
            let status = der.withUnsafeBytes { derBytes in
                EVP_Digest(derBytes.baseAddress, derBytes.count, &digest, &digestLength, EVP_sha256(), nil)
            }
            guard status == 1, digestLength == 32 else { return nil }
            return TLSPublicKeyPin(sha256: digest)
        }
    }
#endif
