import LongLink
import LongLinkServer
import LongLinkTestSupport

/// A server configuration for TLS tests: the test CA's `localhost` certificate, and client
/// certificates required when `clients` says so.
func serverConfiguration(
    _ certificates: TestCertificates, clients: ClientCertificateVerification = .none
) -> ServerConfiguration {
    var configuration = ServerConfiguration.testing
    var tls = ServerTLSConfiguration(
        certificateChain: .file(certificates.serverCertificate), privateKey: .file(certificates.serverKey))
    tls.clientCertificateVerification = clients
    configuration.tls = tls
    return configuration
}

/// A client configuration for TLS tests: it trusts the test CA only.
func clientConfiguration(_ certificates: TestCertificates, _ endpoint: Endpoint) -> ClientConfiguration {
    var configuration = ClientConfiguration.forTests(endpoint)
    var tls = TLSConfiguration.makeClientConfiguration()
    tls.trustRoots = .pemFile(certificates.caCertificate)
    configuration.tls = tls
    // Handshakes cost real CPU; a whole parallel test run must not time them out.
    configuration.connectTimeout = .seconds(10)
    return configuration
}
