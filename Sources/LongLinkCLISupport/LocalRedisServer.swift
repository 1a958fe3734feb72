import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `redis-server` of our own, for the tool (`demo --fleet`, `soak --fleet`), the tests and the
/// benchmarks: started on a free loopback port in a temporary directory (RDB snapshots off, its log
/// there), checked to be this process, and stopped by its process id. One class for the three, so
/// that they start, check and stop Redis one way.
package final class LocalRedisServer: Sendable {
    /// No `redis-server` binary was found.
    package struct Missing: Error, CustomStringConvertible {
        package init() {}

        package var description: String {
            "needs redis-server, which is not on the PATH or in /usr/bin: install the Debian package redis-server"
        }
    }

    /// redis-server did not start or never answered; in a ``LocalRedisCluster``, a step of its
    /// start or of a failover did not succeed in time.
    package struct StartFailed: Error, CustomStringConvertible {
        package var description: String

        package init(_ description: String) {
            self.description = description
        }
    }

    /// Tells whether the Redis on `port` is the process `processID` (a TLS-only server needs a
    /// client of its own for that).
    package typealias ReadinessCheck = @Sendable (_ port: Int, _ processID: Int32) async -> Bool

    /// The TCP port it listens on (127.0.0.1).
    package let port: Int
    /// Its working directory (its data and log), removed by ``stop()``.
    package let directory: URL
    private let binary: String
    /// Its arguments besides the port, the directory, the persistence and the logging.
    private let extraArguments: [String]
    /// Whether its data goes to an AOF too (kept across ``restart(keepingData:within:)``).
    private let appendOnly: Bool
    private let ready: ReadinessCheck
    /// The process, replaced by a restart on the same port.
    private let process: Mutex<ChildProcess>

    private init(
        port: Int, directory: URL, binary: String, extraArguments: [String], appendOnly: Bool,
        ready: @escaping ReadinessCheck
    ) throws {
        self.port = port
        self.directory = directory
        self.binary = binary
        self.extraArguments = extraArguments
        self.appendOnly = appendOnly
        self.ready = ready
        process = Mutex(
            try Self.launch(binary, port: port, directory: directory, appendOnly: appendOnly, extra: extraArguments))
    }

    /// Output goes to the null device and the log file: nothing reads a pipe, so no reader
    /// threads outlive the caller.
    private static func launch(
        _ binary: String, port: Int, directory: URL, appendOnly: Bool, extra: [String]
    ) throws -> ChildProcess {
        try ChildProcess(
            binary,
            arguments: [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", appendOnly ? "yes" : "no",
                "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning",
                "--logfile", directory.appendingPathComponent("redis.log").path,
            ] + extra, standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .nullDevice)
    }

    /// `redis://127.0.0.1:PORT`.
    package var url: String { "redis://127.0.0.1:\(port)" }

    /// Its process id.
    package var processIdentifier: Int32 { process.withLock { $0.processIdentifier } }

    /// Whether the process runs.
    package var isRunning: Bool { process.withLock { $0.isRunning } }

    /// The binary: `LONGLINK_REDIS_SERVER` when set (and nothing else), else `redis-server` on the
    /// PATH, in /usr/bin or /usr/sbin.
    package static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let fileManager = FileManager.default
        if let path = environment["LONGLINK_REDIS_SERVER"] {
            return fileManager.isExecutableFile(atPath: path) ? path : nil
        }
        let directories =
            (environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"]
        return directories.map { "\($0)/redis-server" }.first { fileManager.isExecutableFile(atPath: $0) }
    }

    /// Starts `binary` on a port from `freePort` (with `arguments` for that port added; later
    /// arguments win, so `--port 0 --tls-port P` speaks only TLS) and waits, at most `timeout` per
    /// attempt, until `ready` (by default: `INFO server` over plain TCP names this process) holds.
    /// With `appendOnly`, its data goes to an AOF as well. Throws ``Missing`` without a binary,
    /// ``StartFailed`` when it does not come up.
    package static func start(
        binary: String? = locate(), appendOnly: Bool = true, freePort: @Sendable () async throws -> Int,
        arguments: @Sendable (_ port: Int) async throws -> [String] = { _ in [] },
        ready: @escaping ReadinessCheck = { port, processID in RedisProbe.processID(port: port) == processID },
        within timeout: Duration = .seconds(10)
    ) async throws -> LocalRedisServer {
        guard let binary else { throw Missing() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var problem = "no attempt"
        // A free port can be taken between the probe and redis-server's bind: a few attempts.
        for _ in 0..<5 {
            let port = try await freePort()
            let server = try LocalRedisServer(
                port: port, directory: directory, binary: binary, extraArguments: try await arguments(port),
                appendOnly: appendOnly, ready: ready)
            if await server.waitUntilReady(within: timeout) { return server }
            problem =
                server.isRunning ? "no answer on port \(port) within \(timeout)" : "it exited at once (port taken?)"
            await server.kill()
        }
        try? FileManager.default.removeItem(at: directory)
        throw StartFailed("redis-server (\(binary)) did not start: \(problem)")
    }

    /// Starts it again on its port, once killed (see ``kill()``): in its directory with its data
    /// (in a cluster, its node configuration too), or, `keepingData` false, with an empty
    /// directory and no persistence, as a node that lost everything.
    package func restart(keepingData: Bool = true, within timeout: Duration = .seconds(10)) async throws {
        await kill()
        if !keepingData {
            try? FileManager.default.removeItem(at: directory)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        let started = try Self.launch(
            binary, port: port, directory: directory, appendOnly: keepingData && appendOnly, extra: extraArguments)
        process.withLock { $0 = started }
        guard await waitUntilReady(within: timeout) else {
            await kill()
            throw StartFailed("redis-server did not start again on port \(port)")
        }
    }

    /// Polls `ready` until it holds, the process exits, or `timeout` passes: redis-server is another
    /// process, with nothing to await on. Its own process id, not any answer: when another Redis
    /// holds the port, this one fails to bind and exits, and the other's answer must not pass.
    package func waitUntilReady(within timeout: Duration = .seconds(10)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, isRunning {
            if await ready(port, processIdentifier) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// Sends `signal` to the process (SIGSTOP pauses it with its connections open, SIGCONT resumes).
    package func send(_ signal: Int32) {
        process.withLock { $0.send(signal) }
    }

    /// SIGKILL, at once (also from a signal handler): nothing of its memory is kept.
    package func killNow() {
        process.withLock { $0.kill() }
    }

    /// SIGKILL and a bounded wait for the exit; the directory stays until ``stop()``.
    package func kill() async {
        let process = process.withLock { $0 }
        process.kill()
        _ = await process.waitForExit(within: .seconds(10))
    }

    /// Kills the process, waits (bounded) for it to end and removes its directory.
    package func stop() async {
        await kill()
        try? FileManager.default.removeItem(at: directory)
    }
}
