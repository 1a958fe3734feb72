import LongLinkCore

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    internal import COpenSSL
#endif

/// One OpenSSL `SSL_CTX` built from a ``TLSConfiguration`` (a client's) or a
/// ``ServerTLSConfiguration``: certificates, keys and trust roots are loaded once, and every
/// connection's session is made from it. OpenSSL allows making sessions from one context on several
/// threads once it is set up, and nothing changes it afterwards.
package final class TLSContext: @unchecked Sendable {
    /// The ALPN protocol LongLink speaks, in ALPN's wire form (a length byte, then the name).
    static let applicationProtocol: [UInt8] = [10] + Array("longlink/1".utf8)

    /// Whether this build has TLS: false on Darwin and in a Linux build with `LONGLINK_NO_OPENSSL` (which
    /// compiles Darwin's path here), where every context throws ``TLSFailure/Reason/unavailable``.
    #if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
        package static let isAvailable = true
    #else
        package static let isAvailable = false
    #endif

    let isClient: Bool
    /// Whether the peer's chain is verified (a client with full verification, a server with mTLS).
    let verifiesPeer: Bool
    let pins: [TLSPublicKeyPin]
    let serverHostname: String?
    /// How long an accepted connection may take to finish its handshake (servers only).
    package let handshakeTimeout: Duration

    #if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
        let context: OpaquePointer

        /// A client's context.
        package init(client configuration: TLSConfiguration) throws(LongLinkError) {
            isClient = true
            verifiesPeer = configuration.certificateVerification == .fullVerification
            pins = configuration.pinnedPublicKeys
            serverHostname = configuration.serverHostname
            handshakeTimeout = .zero
            // Set up on a local first: once every property is set, a throw would also run deinit.
            let context = try Self.makeContext(client: true, minimum: configuration.minimumTLSVersion)
            do throws(LongLinkError) {
                if verifiesPeer {
                    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
                    try Self.loadTrustRoots(configuration.trustRoots, into: context, advertise: false)
                } else {
                    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
                }
                let status = Self.applicationProtocol.withUnsafeBufferPointer {
                    SSL_CTX_set_alpn_protos(context, $0.baseAddress, UInt32($0.count))
                }
                guard status == 0 else { throw Self.configurationError("cannot set the ALPN protocol") }
                switch (configuration.certificateChain, configuration.privateKey) {
                case (nil, nil):
                    break
                case (let chain?, let key?):
                    try Self.useIdentity(chain: chain, key: key, in: context)
                default:
                    throw LongLinkError(
                        code: .invalidConfiguration,
                        message: "a TLS client certificate needs both certificateChain and privateKey")
                }
            } catch {
                SSL_CTX_free(context)
                throw error
            }
            self.context = context
        }

        /// A server's context.
        package init(server configuration: ServerTLSConfiguration) throws(LongLinkError) {
            isClient = false
            pins = []
            serverHostname = nil
            handshakeTimeout = configuration.handshakeTimeout
            guard configuration.handshakeTimeout > .zero else {
                throw LongLinkError(code: .invalidConfiguration, message: "the TLS handshake timeout must be positive")
            }
            if case .required = configuration.clientCertificateVerification {
                verifiesPeer = true
            } else {
                verifiesPeer = false
            }
            let context = try Self.makeContext(client: false, minimum: configuration.minimumTLSVersion)
            do throws(LongLinkError) {
                try Self.useIdentity(
                    chain: configuration.certificateChain, key: configuration.privateKey, in: context)
                switch configuration.clientCertificateVerification {
                case .none:
                    SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
                case .required(let roots):
                    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
                    try Self.loadTrustRoots(roots, into: context, advertise: true)
                }
                SSL_CTX_set_alpn_select_cb(context, selectApplicationProtocol, nil)
                // Nobody resumes sessions here: tickets would only cost bytes and time.
                _ = longlink_SSL_CTX_set_num_tickets(context, 0)
                _ = longlink_SSL_CTX_set_session_cache_mode(context, 0)
            } catch {
                SSL_CTX_free(context)
                throw error
            }
            self.context = context
        }

        deinit {
            SSL_CTX_free(context)
        }

        private static func makeContext(client: Bool, minimum: TLSVersion) throws(LongLinkError) -> OpaquePointer {
            guard let context = SSL_CTX_new(client ? TLS_client_method() : TLS_server_method()) else {
                throw configurationError("cannot create an OpenSSL context")
            }
            let version = minimum == .tlsv13 ? TLS1_3_VERSION : TLS1_2_VERSION
            _ = longlink_SSL_CTX_set_min_proto_version(context, version)
            // Idle connections give their read and write buffers back.
            _ = longlink_SSL_CTX_set_mode(context, longlink_SSL_MODE_RELEASE_BUFFERS())
            // TLS 1.2 renegotiation buys LongLink nothing and has a history of attacks: refused both ways.
            _ = longlink_SSL_CTX_set_options(context, longlink_SSL_OP_NO_RENEGOTIATION())
            return context
        }

        private static func loadTrustRoots(
            _ roots: TLSTrustRoots, into context: OpaquePointer, advertise: Bool
        ) throws(LongLinkError) {
            let certificates: [OpaquePointer]
            switch roots {
            case .systemDefault:
                guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                    throw configurationError("cannot load the system trust store")
                }
                return
            case .pemFile(let path):
                certificates = try PEM.certificates(from: .file(path), what: "trust roots")
            case .pemBytes(let bytes):
                certificates = try PEM.certificates(from: .bytes(bytes), what: "trust roots")
            }
            defer { certificates.forEach { X509_free($0) } }
            let store = SSL_CTX_get_cert_store(context)
            for certificate in certificates {
                X509_STORE_add_cert(store, certificate)
                // A server names the authorities it accepts in its CertificateRequest.
                if advertise { SSL_CTX_add_client_CA(context, certificate) }
            }
            ERR_clear_error()
        }

        private static func useIdentity(chain: PEMSource, key: PEMSource, in context: OpaquePointer)
            throws(LongLinkError)
        {
            let certificates = try PEM.certificates(from: chain, what: "certificate chain")
            defer { certificates.forEach { X509_free($0) } }
            guard SSL_CTX_use_certificate(context, certificates[0]) == 1 else {
                throw configurationError("the certificate cannot be used")
            }
            for intermediate in certificates.dropFirst() {
                guard longlink_SSL_CTX_add1_chain_cert(context, intermediate) == 1 else {
                    throw configurationError("an intermediate certificate cannot be used")
                }
            }
            let privateKey = try PEM.privateKey(from: key)
            defer { EVP_PKEY_free(privateKey) }
            guard SSL_CTX_use_PrivateKey(context, privateKey) == 1, SSL_CTX_check_private_key(context) == 1 else {
                throw configurationError("the private key does not match the certificate")
            }
        }

        static func configurationError(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: "\(message): \(OpenSSLErrors.drain())")
        }

        /// A session for one connection; `serverName` is the host a client connects to.
        func makeSession(serverName: String?) throws(LongLinkError) -> TLSSession {
            try TLSSession(context: self, serverName: serverHostname ?? serverName)
        }
    #else
        /// A client's context: in this build, always the ``TLSFailure/Reason/unavailable`` error.
        package init(client configuration: TLSConfiguration) throws(LongLinkError) {
            throw .tls(.unavailable, "TLS is not available on this platform yet (LongLink uses OpenSSL, Linux only)")
        }

        /// A server's context: in this build, always the ``TLSFailure/Reason/unavailable`` error.
        package init(server configuration: ServerTLSConfiguration) throws(LongLinkError) {
            throw .tls(.unavailable, "TLS is not available on this platform yet (LongLink uses OpenSSL, Linux only)")
        }

        func makeSession(serverName: String?) throws(LongLinkError) -> TLSSession {
            throw .tls(.unavailable, "TLS is not available on this platform yet")
        }
    #endif
}

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    /// The server's ALPN choice: `longlink/1` when the client offers it; a client that offers other
    /// protocols only is refused; one that offers none is served anyway (generic TLS tools).
    private func selectApplicationProtocol(
        _ ssl: OpaquePointer?, _ selected: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
        _ selectedLength: UnsafeMutablePointer<UInt8>?, _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32,
        _ argument: UnsafeMutableRawPointer?
    ) -> Int32 {
        guard let offered, let selected, let selectedLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
        let wanted = TLSContext.applicationProtocol
        var index = 0
        while index < Int(offeredLength) {
            let length = Int(offered[index])
            guard index + 1 + length <= Int(offeredLength) else { break }
            if length == wanted.count - 1,
                (0..<length).allSatisfy({ offered[index + 1 + $0] == wanted[1 + $0] })
            {
                selected.pointee = offered + index + 1
                selectedLength.pointee = UInt8(length)
                return SSL_TLSEXT_ERR_OK
            }
            index += 1 + length
        }
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
#endif
