import Foundation
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// A `redis-server` of the test's own that speaks only TLS (`--port 0 --tls-port P`), with the
/// test CA's certificate for `localhost` and `127.0.0.1`, no client certificates
/// asked, and one ACL user with a password besides a `default` user that is switched off.
final class RedisTLSServer: @unchecked Sendable {
    static let user = "fleet-app"
    static let password = "tls-pa55-\(UInt32.random(in: 0...UInt32.max))"

    let port: Int
    let certificates: TestCertificates
    private let directory: URL
    private let process: Process

    /// The ACL user over TLS, trusting the test CA; `tls.trustRoots` and the password are the
    /// tests' to change.
    var configuration: RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        var tls = TLSConfiguration()
        tls.trustRoots = .pemFile(certificates.caCertificate)
        configuration.tls = tls
        configuration.username = Self.user
        configuration.password = Self.password
        configuration.commandTimeout = .milliseconds(1500)
        configuration.connectTimeout = .seconds(2)
        configuration.initialReconnectDelay = .milliseconds(10)
        configuration.maximumReconnectDelay = .milliseconds(100)
        return configuration
    }

    private init(port: Int, certificates: TestCertificates, directory: URL, process: Process) {
        self.port = port
        self.certificates = certificates
        self.directory = directory
        self.process = process
    }

    struct Exited: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts a server and waits, bounded, until the ACL user's PING over TLS is answered.
    static func start() async throws -> RedisTLSServer {
        guard let binary = RedisServerProcess.binary else { throw RedisServerProcess.Missing() }
        let certificates = try TestCertificates.make()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-redis-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        // A free port can be taken between the probe and redis-server's bind: try a few.
        for _ in 0..<5 {
            let port = try await freePort()
            let process = Process()
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = [
                "--port", "0", "--tls-port", String(port), "--bind", "127.0.0.1",
                "--tls-cert-file", certificates.serverCertificate,
                "--tls-key-file", certificates.serverKey,
                "--tls-ca-cert-file", certificates.caCertificate, "--tls-auth-clients", "no",
                "--user", user, "on", ">\(password)", "~*", "&*", "+@all",
                "--user", "default", "off",
                "--save", "", "--appendonly", "no", "--dir", directory.path, "--daemonize", "no",
                "--loglevel", "warning",
            ]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            let server = RedisTLSServer(port: port, certificates: certificates, directory: directory, process: process)
            do {
                try await server.waitUntilReady()
                return server
            } catch {
                await server.kill9()
                lastError = error
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError!
    }

    /// Polls PING over TLS as the ACL user, bounded: the server is another process.
    private func waitUntilReady(within timeout: Duration = .seconds(10)) async throws {
        try await eventually("redis-server answers PING over TLS on port \(port)", within: timeout) {
            let client = RedisClient(configuration: configuration)
            let answered = (try? await client.run(RedisCommand("PING")))?.string == "PONG"
            await client.shutdown()
            return answered || !process.isRunning
        }
        guard process.isRunning else {
            throw Exited(description: "redis-server with --tls-port \(port) exited")
        }
    }

    /// SIGKILL (see ``RedisServerProcess``), then a bounded wait for the exit.
    private func kill9() async {
        kill(process.processIdentifier, SIGKILL)
        try? await eventually("redis-server (pid \(process.processIdentifier)) exits", within: .seconds(10)) {
            !process.isRunning
        }
    }

    /// Stops the server and removes its directory.
    func stop() async {
        await kill9()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a fresh TLS redis-server, stopped afterwards whatever happens.
func withRedisTLSServer(_ body: (RedisTLSServer) async throws -> Void) async throws {
    let server = try await RedisTLSServer.start()
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}
