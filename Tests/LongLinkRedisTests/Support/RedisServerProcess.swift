import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// A `redis-server` of the test's own, on a free port in a temporary directory, stopped by its
/// process id: started with AOF on and RDB snapshots off, restarted with no persistence at all
/// (all data gone, as after losing a node), paused and resumed with SIGSTOP and SIGCONT.
final class RedisServerProcess: @unchecked Sendable {
    /// The binary: `LONGLINK_REDIS_SERVER` (when set, nothing else), else `redis-server` on the
    /// PATH or in /usr/bin.
    static let binary: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["LONGLINK_REDIS_SERVER"] {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        let directories =
            (environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"]
        return directories.map { "\($0)/redis-server" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

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

    let port: Int
    let directory: URL
    let setup: Setup
    private(set) var process: ChildProcess

    var configuration: RedisConfiguration {
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

    private init(port: Int, directory: URL, setup: Setup, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.setup = setup
        self.process = process
    }

    /// Starts a server and waits (bounded) until it answers PING.
    static func start(_ setup: Setup = Setup()) async throws -> RedisServerProcess {
        guard let binary else { throw Missing() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: (any Error)?
        // A free port can be taken between the probe and redis-server's bind: try a few.
        for _ in 0..<5 {
            let port = try await freePort()
            let process = try launch(binary, port: port, directory: directory, persistent: true, setup: setup)
            let server = RedisServerProcess(port: port, directory: directory, setup: setup, process: process)
            do {
                try await server.waitUntilReady()
                return server
            } catch {
                process.kill()
                _ = await process.waitForExit(within: .seconds(10))
                lastError = error
            }
        }
        throw lastError!
    }

    /// Output goes to the null device: nothing reads it, so no reader threads outlive the test.
    private static func launch(
        _ binary: String, port: Int, directory: URL, persistent: Bool, setup: Setup
    ) throws -> ChildProcess {
        let arguments = [
            "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", persistent ? "yes" : "no",
            "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning",
        ]
        return try ChildProcess(
            binary, arguments: arguments + setup.arguments(port), standardInput: .nullDevice,
            standardOutput: .nullDevice, standardError: .nullDevice)
    }

    /// Kills the process (SIGKILL: nothing of its data is needed afterwards) and waits, bounded,
    /// for it to end.
    private func kill9() async throws {
        process.kill()
        try await eventually("redis-server (pid \(process.processIdentifier)) exits", within: .seconds(10)) {
            !process.isRunning
        }
    }

    /// Polls `INFO server`, bounded (the server is another process, with nothing to await on),
    /// until the Redis on the port says it is this process: when another test's Redis holds the
    /// port, this one fails to bind and exits, and the other's answer must not pass for its own.
    func waitUntilReady(within timeout: Duration = .seconds(10)) async throws {
        let ours = "process_id:\(process.processIdentifier)\r\n"
        var exited = false
        try await eventually("redis-server (pid \(process.processIdentifier)) answers on port \(port)", within: timeout) {
            guard process.isRunning else {
                exited = true
                return true
            }
            let client = RedisClient(configuration: configuration)
            let info = (try? await client.run(RedisCommand("INFO", "server")))?.string
            await client.shutdown()
            return info?.contains(ours) == true
        }
        if exited { throw NotListening(port: port) }
    }

    /// The process exited before it answered: most likely its port was taken.
    struct NotListening: Error, CustomStringConvertible {
        var port: Int
        var description: String { "redis-server exited before answering on port \(port) (taken?)" }
    }

    /// Pauses the process (SIGSTOP): connections stay open, nothing answers.
    func pause() { process.send(SIGSTOP) }

    /// Resumes a paused process (SIGCONT).
    func resume() { process.send(SIGCONT) }

    /// Kills the server and starts a fresh one on the same port with no persistence and an empty
    /// directory: every key is gone.
    func restartWithoutPersistence() async throws {
        try await kill9()
        try await relaunchWithoutPersistence()
    }

    /// Kills the server (SIGKILL), as a crashed node; ``relaunchWithoutPersistence()`` brings it back.
    func crash() async {
        try? await kill9()
    }

    /// Starts a fresh server on the same port with no persistence and an empty directory.
    func relaunchWithoutPersistence() async throws {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = try Self.launch(Self.binary!, port: port, directory: directory, persistent: false, setup: setup)
        try await waitUntilReady()
    }

    /// Stops the server and removes its directory.
    func stop() async {
        try? await kill9()
        try? FileManager.default.removeItem(at: directory)
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
