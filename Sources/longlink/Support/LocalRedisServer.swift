import Foundation
import LongLinkCLISupport
import LongLinkRedis
import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A `redis-server` of the tool's own, for `demo --fleet` and `soak --fleet`: started on a free
/// loopback port in a temporary directory (AOF on, RDB snapshots off), stopped by its process id.
final class LocalRedisServer: Sendable {
    /// No `redis-server` binary was found.
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "needs redis-server, which is not on the PATH or in /usr/bin: install the Debian package redis-server"
        }
    }

    /// redis-server did not start or never answered; in a ``LocalRedisCluster``, a step of its
    /// start or of a failover did not succeed in time.
    struct StartFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// The TCP port it listens on (127.0.0.1).
    let port: Int
    /// Its working directory (the AOF and its log), removed by ``stop()``.
    let directory: URL
    private let process: ChildProcess
    private let binary: String
    /// Its arguments besides the port, the directory and the logging.
    private let extraArguments: [String]

    /// Its process id.
    var processIdentifier: Int32 { process.processIdentifier }

    private init(port: Int, directory: URL, binary: String, extraArguments: [String]) throws {
        self.port = port
        self.directory = directory
        self.binary = binary
        self.extraArguments = extraArguments
        process = try ChildProcess(
            binary,
            arguments: [
                "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
                "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning",
                "--logfile", directory.appendingPathComponent("redis.log").path,
            ] + extraArguments, standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .nullDevice)
    }

    /// `redis://127.0.0.1:PORT`.
    var url: String { "redis://127.0.0.1:\(port)" }

    /// Where LongLink finds it, with `keyPrefix`.
    func configuration(keyPrefix: String) -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        configuration.keyPrefix = keyPrefix
        return configuration
    }

    /// The binary: `LONGLINK_REDIS_SERVER` when set (and nothing else), else `redis-server` on the
    /// PATH, in /usr/bin or /usr/sbin.
    static func locate(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let fileManager = FileManager.default
        if let path = environment["LONGLINK_REDIS_SERVER"] {
            return fileManager.isExecutableFile(atPath: path) ? path : nil
        }
        let directories =
            (environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin", "/usr/sbin"]
        return directories.map { "\($0)/redis-server" }.first { fileManager.isExecutableFile(atPath: $0) }
    }

    /// Starts `binary` (with `arguments` of its port added) and waits, at most `timeout` per
    /// attempt, until it answers `PING`. Throws ``Missing`` without a binary, ``StartFailed`` when
    /// it does not come up.
    static func start(
        binary: String? = locate(), arguments: @Sendable (_ port: Int) async throws -> [String] = { _ in [] },
        within timeout: Duration = .seconds(10)
    ) async throws -> LocalRedisServer {
        guard let binary else { throw Missing() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-tool-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var problem = "no attempt"
        // A free port can be taken between the probe and redis-server's bind: a few attempts.
        for _ in 0..<5 {
            let port = try await freePort()
            let server = try LocalRedisServer(
                port: port, directory: directory, binary: binary, extraArguments: try await arguments(port))
            if await server.waitUntilAnswering(within: timeout) { return server }
            problem = server.isRunning ? "no answer on port \(port) within \(timeout)" : "it exited at once"
            server.killNow()
        }
        try? FileManager.default.removeItem(at: directory)
        throw StartFailed(description: "redis-server (\(binary)) did not start: \(problem)")
    }

    /// The same redis-server started again, on its port, in its directory (its data and, in a
    /// cluster, its node configuration kept), once this one was killed.
    func restarted(within timeout: Duration = .seconds(10)) async throws -> LocalRedisServer {
        _ = await process.waitForExit(within: .seconds(5))
        let server = try LocalRedisServer(
            port: port, directory: directory, binary: binary, extraArguments: extraArguments)
        guard await server.waitUntilAnswering(within: timeout) else {
            server.killNow()
            throw StartFailed(description: "redis-server did not start again on port \(port)")
        }
        return server
    }

    var isRunning: Bool { process.isRunning }

    /// Polls `INFO server` until this process answers, it exits, or `timeout` passes: redis-server
    /// is another process, with nothing to await on. Its own process id, not any answer: when
    /// another Redis holds the port, this one fails to bind and exits, and the other's answer must
    /// not pass for its own.
    private func waitUntilAnswering(within timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline, isRunning {
            if RedisPing.processID(host: "127.0.0.1", port: port) == processIdentifier { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// SIGKILL, at once (also from a signal handler): nothing of its data is kept.
    func killNow() {
        process.kill()
    }

    /// Kills the process, waits (bounded) for it to end and removes its directory.
    func stop() async {
        killNow()
        _ = await process.waitForExit(within: .seconds(5))
        try? FileManager.default.removeItem(at: directory)
    }

    /// Kills redis-server and exits with 128 + the signal on SIGINT or SIGTERM, so that an
    /// interrupted demo or soak leaves no redis-server behind. Cancel the watcher when done.
    func stopOnSignals() -> SignalWatcher {
        SignalWatcher([SIGINT, SIGTERM]) { [self] number in
            killNow()
            try? FileManager.default.removeItem(at: directory)
            exit(128 + number)
        }
    }

    /// A port nothing listens on right now, below Linux's ephemeral range (one the kernel hands out
    /// as a source port could be taken meanwhile).
    static func freePort() async throws -> Int {
        for _ in 0..<50 {
            let port = Int.random(in: 20_000..<32_768)
            guard
                let listener = try? await Listener.bind(
                    to: .tcp(host: "127.0.0.1", port: port), onAccept: { $0.close(.immediately) })
            else { continue }
            listener.close()
            return port
        }
        throw StartFailed(description: "no free port for redis-server")
    }
}

/// A one-shot RESP `PING` over a blocking socket with short timeouts: enough to tell whether a
/// Redis answers, without the Redis client's reconnection machinery.
enum RedisPing {
    /// True when something on `host:port` replies to `PING` with a RESP reply: `+PONG`, or an error
    /// such as `-NOAUTH` (a Redis that wants a password still answers). Nil when `host` is not an
    /// IPv4 address (names are not resolved here).
    static func answers(host: String, port: Int, timeout: Duration = .milliseconds(500)) -> Bool? {
        let reply = exchange(host: host, port: port, timeout: timeout, request: "*1\r\n$4\r\nPING\r\n") { !$0.isEmpty }
        return reply.map { reply in
            reply.first == UInt8(ascii: "+") || reply.first == UInt8(ascii: "-")
        }
    }

    /// The process id the Redis on `host:port` reports in `INFO server`; nil when nothing there
    /// says so. Tells a redis-server of ours from another that holds the port it was given.
    static func processID(host: String, port: Int, timeout: Duration = .milliseconds(500)) -> Int32? {
        let key = Array("process_id:".utf8)
        func value(_ reply: [UInt8]) -> Int32? {
            guard let start = reply.firstRange(of: key)?.upperBound,
                let end = reply[start...].firstIndex(of: UInt8(ascii: "\r"))
            else { return nil }
            return Int32(String(decoding: reply[start..<end], as: UTF8.self))
        }
        let reply = exchange(
            host: host, port: port, timeout: timeout, request: "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"
        ) { value($0) != nil }
        return reply.flatMap(value)
    }

    /// Sends `request` and reads until `complete` says so, the peer closes, 16 KiB arrived or
    /// `timeout` passes for one read. Nil when `host` is not an IPv4 address; empty when nothing
    /// answered.
    private static func exchange(
        host: String, port: Int, timeout: Duration, request: String, until complete: ([UInt8]) -> Bool
    ) -> [UInt8]? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { return nil }
        #if os(Linux)
            let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let socketFD = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socketFD >= 0 else { return [] }
        defer { close(socketFD) }
        let micros =
            Int(timeout.components.seconds) * 1_000_000 + Int(timeout.components.attoseconds / 1_000_000_000_000)
        var limit = timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socketFD, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return [] }
        let bytes = Array(request.utf8)
        #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)  // a peer that closed must not kill the tool with SIGPIPE
        #else
            let flags: Int32 = 0
        #endif
        guard send(socketFD, bytes, bytes.count, flags) == bytes.count else { return [] }
        var reply: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while reply.count < 16 << 10, !complete(reply) {
            let count = recv(socketFD, &chunk, chunk.count, 0)
            guard count > 0 else { break }
            reply += chunk[..<count]
        }
        return reply
    }
}
