/// How a client connects with TLS: whom it trusts, which versions it speaks, which keys it pins.
///
/// The names follow swift-nio-ssl's `TLSConfiguration` where they fit. The defaults verify the
/// server's chain against the system trust store and its name against the host being connected to
/// (sent as SNI), accept TLS 1.2 and 1.3 (1.3 when the server has it), and offer the ALPN protocol
/// `longlink/1`. Verification cannot be turned off quietly: the only way is
/// ``CertificateVerification/insecureNoVerificationForTesting``.
public struct TLSConfiguration: Sendable, Hashable {
    /// The certificates that anchor the server's chain.
    public var trustRoots: TLSTrustRoots = .systemDefault
    /// Whether the server's chain and name are checked.
    public var certificateVerification: CertificateVerification = .fullVerification
    /// The oldest version the client accepts.
    public var minimumTLSVersion: TLSVersion = .tlsv12
    /// The name the server's certificate must carry, also sent as SNI; `nil` uses the endpoint's
    /// host (an IP address is then checked against the certificate's IP entries, and no SNI is sent).
    public var serverHostname: String?
    /// SHA-256 digests of the DER `SubjectPublicKeyInfo` the client accepts, in addition to normal
    /// verification: the connection succeeds only if a certificate of the *verified* chain (the
    /// leaf, an intermediate or the trust root OpenSSL chained it to) has one of these keys;
    /// certificates the server merely appended never count. Without verification, only the leaf's
    /// key is checked. Several pins let keys rotate. Empty: no pinning.
    public var pinnedPublicKeys: [TLSPublicKeyPin] = []
    /// A certificate chain to present when the server asks for one (mutual TLS).
    public var certificateChain: PEMSource?
    /// The private key of ``certificateChain``.
    public var privateKey: PEMSource?

    /// The defaults: full verification against the system trust store, TLS 1.2 or later.
    public init() {}

    /// The defaults, as swift-nio-ssl spells it.
    public static func makeClientConfiguration() -> TLSConfiguration {
        TLSConfiguration()
    }
}

/// How a server offers TLS: its certificate chain and key, and whether clients must present one.
public struct ServerTLSConfiguration: Sendable, Hashable {
    /// The server's certificate chain, leaf first.
    public var certificateChain: PEMSource
    /// The private key of the leaf certificate.
    public var privateKey: PEMSource
    /// Whether clients present certificates (mutual TLS), and who must have issued them.
    public var clientCertificateVerification: ClientCertificateVerification = .none
    /// The oldest version the server accepts.
    public var minimumTLSVersion: TLSVersion = .tlsv12
    /// How long an accepted connection may take to finish its handshake before it is closed.
    public var handshakeTimeout: Duration = .seconds(10)

    /// A configuration serving `certificateChain` with `privateKey`.
    public init(certificateChain: PEMSource, privateKey: PEMSource) {
        self.certificateChain = certificateChain
        self.privateKey = privateKey
    }
}

/// PEM text: a file to read, or the bytes themselves.
public enum PEMSource: Sendable, Hashable {
    /// A PEM file's path.
    case file(String)
    /// PEM text in memory.
    case bytes([UInt8])
}

/// The certificates a TLS peer's chain must lead to.
public enum TLSTrustRoots: Sendable, Hashable {
    /// The system's trust store (OpenSSL's default paths, for example `/etc/ssl/certs`).
    case systemDefault
    /// The certificates in a PEM file, instead of the system's.
    case pemFile(String)
    /// The certificates in PEM text, instead of the system's.
    case pemBytes([UInt8])
}

/// Whether a client checks the server it connects to.
public enum CertificateVerification: Sendable, Hashable {
    /// The chain must lead to a trust root, be valid now, and name the host. The default.
    case fullVerification
    /// No check at all: anyone in the path can read and change the traffic. For tests only; the
    /// name says so on purpose. Public-key pins, when given, are still enforced.
    case insecureNoVerificationForTesting
}

/// Whether a server asks clients for certificates.
public enum ClientCertificateVerification: Sendable, Hashable {
    /// Clients are not asked for certificates. The default.
    case none
    /// Every client must present a certificate chain leading to one of these roots; a handshake
    /// without one, or with another, fails.
    case required(TLSTrustRoots)
}

/// A TLS protocol version.
public enum TLSVersion: Sendable, Hashable, Comparable {
    /// TLS 1.2.
    case tlsv12
    /// TLS 1.3.
    case tlsv13
}

/// The SHA-256 digest of a DER `SubjectPublicKeyInfo` (what `openssl x509 -pubkey | openssl pkey
/// -pubin -outform der | openssl dgst -sha256 -binary | base64` prints).
public struct TLSPublicKeyPin: Sendable, Hashable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let sha256: [UInt8]

    /// A pin from its 32 bytes; `nil` for any other length.
    public init?(sha256: [UInt8]) {
        guard sha256.count == 32 else { return nil }
        self.sha256 = sha256
    }

    /// A pin from its base64 text; `nil` unless it decodes to 32 bytes.
    public init?(base64: String) {
        guard let bytes = Base64.decode(base64) else { return nil }
        self.init(sha256: bytes)
    }

    /// The base64 text.
    public var description: String { Base64.encode(sha256) }
}
