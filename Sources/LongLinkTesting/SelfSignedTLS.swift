import LongLinkTransport
import LongLinkWire

/// A self-signed certificate made at run time (EC P-256, naming `localhost` and `127.0.0.1`), the
/// configurations that present and trust it, and bare connects with or without its handshake: what
/// the benchmarks' TLS scenario measures TLS with. TLS needs OpenSSL: elsewhere `init` throws.
@_spi(Benchmarks)
public struct SelfSignedTLS: Sendable {
    /// A server configuration presenting the certificate.
    public let serverConfiguration: ServerTLSConfiguration
    /// A client configuration that trusts the certificate (and nothing else).
    public let clientConfiguration: TLSConfiguration
    private let clientContext: TLSContext

    /// Makes the certificate, named `commonName`.
    public init(commonName: String) throws(LongLinkError) {
        let certificate = try SelfSignedCertificate(commonName: commonName)
        serverConfiguration = ServerTLSConfiguration(
            certificateChain: .bytes(certificate.certificatePEM), privateKey: .bytes(certificate.privateKeyPEM))
        var client = TLSConfiguration()
        client.trustRoots = .pemBytes(certificate.certificatePEM)
        clientConfiguration = client
        clientContext = try TLSContext(client: client)
    }

    /// Connects to `port` on 127.0.0.1 on `loop`, with a TLS handshake trusting the certificate
    /// when `handshake` is true; returns the connection once established.
    public func connect(port: Int, handshake: Bool, on loop: EventLoop) async throws(LongLinkError) -> Connection {
        try await Connection.connect(
            to: .tcp(host: "127.0.0.1", port: port), tls: handshake ? clientContext : nil, on: loop)
    }
}
