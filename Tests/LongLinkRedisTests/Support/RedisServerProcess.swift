import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// A `redis-server` of the test's own: the shared launcher's (`LocalRedisServer`, on a free port in
/// a temporary directory, stopped by its process id), started with AOF on and RDB snapshots off,
/// restarted with no persistence at all (all data gone, as after losing a node), paused and resumed
/// with SIGSTOP and SIGCONT, and reached by a `RedisConfiguration` with the tests' timeouts.
final class RedisServerProcess: Sendable {
    /// The binary: `LONGLINK_REDIS_SERVER` (when set, nothing else), else `redis-server` on the
    /// PATH, in /usr/bin or /usr/sbin.
    static let binary: String? = LocalRedisServer.locate()

    /// Whether the Redis tests run: always under CI (where a missing binary must fail them, not
    /// skip them), elsewhere when the binary is there; otherwise one line says why they are skipped.
    static let testsEnabled: Bool = {
        if binary != nil || ProcessInfo.processInfo.environment["CI"] != nil { return true }
        print("LongLinkRedisTests: redis-server not found (Debian package redis-server); the Redis tests are skipped")
        return false
    }()

    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "redis-server not found and CI is set: install the Debian package redis-server (CI must not skip these tests)"
        }
    }

    /// What a server is started with beyond the defaults, given its port (later arguments win:
    /// `--port 0 --tls-port P` speaks only TLS, see `RedisTLSServer.swift`), and how a client then
    /// reaches it.
    struct Setup: Sendable {
        var arguments: @Sendable (_ port: Int) -> [String] = { _ in [] }
        var configure: @Sendable (inout RedisConfiguration) -> Void = { _ in }
    }

    let server: LocalRedisServer
    let setup: Setup

    var port: Int { server.port }
    var directory: URL { server.directory }
    var isRunning: Bool { server.isRunning }
    var configuration: RedisConfiguration { Self.configuration(port: port, setup) }

    init(_ server: LocalRedisServer, setup: Setup = Setup()) {
        self.server = server
        self.setup = setup
    }

    /// How a client reaches the server on `port` started with `setup`.
    private static func configuration(port: Int, _ setup: Setup) -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        // Short enough that outage tests end quickly, long enough for a machine running the whole
        // suite (a 500 ms bound was missed there by a healthy Redis).
        configuration.commandTimeout = .milliseconds(1500)
        configuration.connectTimeout = .seconds(1)
        configuration.initialReconnectDelay = .milliseconds(10)
        configuration.maximumReconnectDelay = .milliseconds(100)
        setup.configure(&configuration)
        return configuration
    }

    /// Starts a server and waits (bounded) until it answers as itself: its `INFO server`, asked
    /// through LongLink's own client (TLS and a login included), names its process id.
    static func start(_ setup: Setup = Setup()) async throws -> RedisServerProcess {
        guard let binary else { throw Missing() }
        let server = try await LocalRedisServer.start(
            binary: binary, freePort: { try await freePort() }, arguments: { setup.arguments($0) },
            ready: { port, processID in
                let client = RedisClient(configuration: configuration(port: port, setup))
                let info = (try? await client.run(RedisCommand("INFO", "server")))?.string
                await client.shutdown()
                return info?.contains("process_id:\(processID)\r\n") == true
            })
        return RedisServerProcess(server, setup: setup)
    }

    /// Waits (bounded) until the server answers as itself again.
    func waitUntilReady(within timeout: Duration = .seconds(10)) async throws {
        guard await server.waitUntilReady(within: timeout) else { throw NotListening(port: port) }
    }

    /// The process exited or was silent before it answered: most likely its port was taken.
    struct NotListening: Error, CustomStringConvertible {
        var port: Int
        var description: String { "redis-server did not answer on port \(port) (taken?)" }
    }

    /// Pauses the process (SIGSTOP): connections stay open, nothing answers.
    func pause() { server.send(SIGSTOP) }

    /// Resumes a paused process (SIGCONT).
    func resume() { server.send(SIGCONT) }

    /// Kills the server and starts a fresh one on the same port with no persistence and an empty
    /// directory: every key is gone.
    func restartWithoutPersistence() async throws {
        try await server.restart(keepingData: false)
    }

    /// Kills the server (SIGKILL), as a crashed node; ``relaunchWithoutPersistence()`` brings it back.
    func crash() async {
        await server.kill()
    }

    /// Starts a fresh server on the same port with no persistence and an empty directory.
    func relaunchWithoutPersistence() async throws {
        try await server.restart(keepingData: false)
    }

    /// Stops the server and removes its directory.
    func stop() async {
        await server.stop()
    }
}

/// Runs `body` with a fresh redis-server, stopped afterwards whatever happens.
func withRedisServer(
    _ setup: RedisServerProcess.Setup = .init(), _ body: (RedisServerProcess) async throws -> Void
) async throws {
    let server = try await RedisServerProcess.start(setup)
    do {
        try await body(server)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}
