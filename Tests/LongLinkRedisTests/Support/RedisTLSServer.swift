import LongLinkTestSupport
import LongLinkTransport

@testable import LongLinkRedis

/// A ``RedisServerProcess`` that speaks only TLS (`--port 0 --tls-port P`), with the test CA's
/// certificate for `localhost` and `127.0.0.1`, no client certificates asked, and one ACL user
/// with a password besides a `default` user that is switched off. Its ``RedisServerProcess/configuration``
/// logs in as that user over TLS, trusting the test CA.
enum RedisTLSServer {
    static let user = "fleet-app"
    static let password = "tls-pa55-\(UInt32.random(in: 0...UInt32.max))"

    static func setup() async throws -> RedisServerProcess.Setup {
        let certificates = try await TestCertificates.make()
        return RedisServerProcess.Setup(
            arguments: { port in
                [
                    "--port", "0", "--tls-port", String(port),
                    "--tls-cert-file", certificates.serverCertificate, "--tls-key-file", certificates.serverKey,
                    "--tls-ca-cert-file", certificates.caCertificate, "--tls-auth-clients", "no",
                    "--user", user, "on", ">\(password)", "~*", "&*", "+@all",
                    "--user", "default", "off",
                ]
            },
            configure: { configuration in
                var tls = TLSConfiguration()
                tls.trustRoots = .pemFile(certificates.caCertificate)
                configuration.tls = tls
                configuration.username = user
                configuration.password = password
                configuration.connectTimeout = .seconds(2)
            })
    }
}

/// Runs `body` with a fresh TLS redis-server, stopped afterwards whatever happens.
func withRedisTLSServer(_ body: (RedisServerProcess) async throws -> Void) async throws {
    try await withRedisServer(try await RedisTLSServer.setup(), body)
}
