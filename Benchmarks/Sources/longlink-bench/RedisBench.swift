import BenchCLISupport
import Foundation
@_spi(Benchmarks) import LongLinkTesting

/// The Redis binaries `longlink-bench fleet` runs: `redis-server` (its own, on a free port) and
/// `redis-benchmark` (Redis's own rate on that server, measured in the same run).
struct RedisTools: Sendable {
    var server: String
    var benchmark: String

    /// The binaries in `directory` (`--redis-bin`), else on the PATH or in /usr/bin; a one-line
    /// reason (with the Debian package and what `neededBy` them) when either is missing.
    static func find(in directory: String?, neededBy: String = "the fleet scenario") -> Result<RedisTools, BenchError> {
        let directories =
            directory.map { [$0] }
            ?? (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init) + ["/usr/bin"]
        func locate(_ name: String, package: String) -> Result<String, BenchError> {
            if let path = directories.map({ "\($0)/\(name)" }).first(where: FileManager.default.isExecutableFile) {
                return .success(path)
            }
            let place = directory.map { "in \($0)" } ?? "on the PATH or in /usr/bin"
            return .failure(
                BenchError("\(name) not found \(place) (Debian package \(package)); \(neededBy) needs it"))
        }
        return locate("redis-server", package: "redis-server").flatMap { server in
            locate("redis-benchmark", package: "redis-tools").map { RedisTools(server: server, benchmark: $0) }
        }
    }
}

/// A `redis-server` of the benchmark's own: a free port, a temporary directory, no persistence
/// (`--save '' --appendonly no`: the figures are Redis's in-memory rate), stopped by its pid.
final class RedisBenchServer: Sendable {
    let port: Int
    let directory: URL
    private let process: ChildProcess

    var pid: Int32 { process.processIdentifier }

    private init(port: Int, directory: URL, process: ChildProcess) {
        self.port = port
        self.directory = directory
        self.process = process
    }

    /// Runs `body` with a server started with `extraArguments` and stops it afterwards, also when
    /// `body` throws.
    static func with<Value>(
        _ tools: RedisTools, extraArguments: [String] = [], _ body: (RedisBenchServer) async throws -> Value
    ) async throws -> Value {
        let redis = try await start(tools, extraArguments: extraArguments)
        do {
            let value = try await body(redis)
            await redis.stop()
            return value
        } catch {
            await redis.stop()
            throw error
        }
    }

    /// Starts one with `extraArguments` added (a cluster node's, for ``RedisBenchCluster``).
    static func start(_ tools: RedisTools, extraArguments: [String] = []) async throws -> RedisBenchServer {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-bench-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var lastError: any Error = BenchError("redis-server did not start")
        // The free port can be taken between the probe and redis-server's bind: try a few.
        for _ in 0..<5 {
            let port = try await freePort()
            let process = try ChildProcess(
                tools.server,
                arguments: [
                    "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning",
                ] + extraArguments, standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .nullDevice)
            let server = RedisBenchServer(port: port, directory: directory, process: process)
            do {
                try await server.waitUntilReady()
                return server
            } catch {
                lastError = error
                await server.kill()
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw lastError
    }

    private func waitUntilReady() async throws {
        let deadline = ContinuousClock.now.advanced(by: .seconds(10))
        while ContinuousClock.now < deadline {
            guard process.isRunning else { break }
            if let probe = try? RedisProbe(port: port), case .simple("PONG")? = try? probe.command(["PING"]) {
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchError("redis-server on port \(port) did not answer PING within 10 s")
    }

    /// SIGKILL (nothing of its data is kept) and a bounded wait for the exit; the directory stays
    /// until ``stop()``.
    func kill() async {
        process.kill()
        _ = await process.waitForExit(within: .seconds(10))
    }

    /// Stops the server by its pid and removes its directory.
    func stop() async {
        await kill()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A RESP2 reply.
enum RedisReply: Equatable {
    case simple(String)
    case error(String)
    case integer(Int)
    case bulk([UInt8]?)
    case array([RedisReply]?)

    var text: String? {
        switch self {
        case .simple(let text): text
        case .bulk(let bytes?): String(decoding: bytes, as: UTF8.self)
        default: nil
        }
    }
}

/// A blocking RESP2 connection for the benchmark's own questions to Redis (INFO, CLIENT LIST,
/// SLOWLOG): apart from LongLinkRedis's client, so that it adds nothing to what is measured.
final class RedisProbe {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var position = 0

    init(port: Int) throws {
        fd = try connectLoopback(port: port, receiveTimeoutSeconds: 10)
    }

    deinit { Glibc.close(fd) }

    func command(_ arguments: [String]) throws -> RedisReply {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.utf8.count)\r\n".utf8) + Array(argument.utf8) + [13, 10]
        }
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw BenchError("write to Redis: errno \(errno)") }
            sent += written
        }
        return try reply()
    }

    /// The `INFO` section's `key:value` lines.
    func info(_ section: String) throws -> [String: String] {
        guard let text = try command(["INFO", section]).text else { throw BenchError("INFO \(section): no text") }
        var fields: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = String(line[line.index(after: colon)...])
        }
        return fields
    }

    /// Calls per command since Redis started (`INFO commandstats`), commands run by scripts included.
    func commandCalls() throws -> [String: Int] {
        try info("commandstats").reduce(into: [:]) { calls, field in
            guard field.key.hasPrefix("cmdstat_"),
                let value = field.value.split(separator: ",").first(where: { $0.hasPrefix("calls=") })
            else { return }
            calls[String(field.key.dropFirst("cmdstat_".count))] = Int(value.dropFirst("calls=".count))
        }
    }

    /// Redis's CPU time (user + system) since it started.
    func cpuSeconds() throws -> Double {
        let cpu = try info("cpu")
        return (Double(cpu["used_cpu_user"] ?? "") ?? 0) + (Double(cpu["used_cpu_sys"] ?? "") ?? 0)
    }

    /// Connections open now, this one included (`CLIENT LIST`).
    func clientCount() throws -> Int {
        guard let text = try command(["CLIENT", "LIST"]).text else { throw BenchError("CLIENT LIST: no text") }
        return text.split(whereSeparator: \.isNewline).count
    }

    private func byte() throws -> UInt8 {
        if position == buffer.count {
            var chunk = [UInt8](repeating: 0, count: 64 << 10)
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw BenchError("read from Redis: \(count == 0 ? "closed" : "errno \(errno)")") }
            buffer = Array(chunk[..<count])
            position = 0
        }
        defer { position += 1 }
        return buffer[position]
    }

    private func line() throws -> String {
        var bytes: [UInt8] = []
        while true {
            let next = try byte()
            if next == 10, bytes.last == 13 { return String(decoding: bytes.dropLast(), as: UTF8.self) }
            bytes.append(next)
        }
    }

    private func reply() throws -> RedisReply {
        let kind = try byte()
        let rest = try line()
        switch kind {
        case UInt8(ascii: "+"): return .simple(rest)
        case UInt8(ascii: "-"): return .error(rest)
        case UInt8(ascii: ":"): return .integer(Int(rest) ?? 0)
        case UInt8(ascii: "$"):
            guard let length = Int(rest), length >= 0 else { return .bulk(nil) }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(length)
            for _ in 0..<(length + 2) { bytes.append(try byte()) }
            return .bulk(Array(bytes.prefix(length)))
        case UInt8(ascii: "*"):
            guard let count = Int(rest), count >= 0 else { return .array(nil) }
            return .array(try (0..<count).map { _ in try reply() })
        default: throw BenchError("unexpected RESP type byte \(kind)")
        }
    }
}

/// `redis-benchmark` run as a child process against the benchmark's Redis.
enum RedisBenchmarkTool {
    struct Result: Sendable {
        var rate: Double
        var p50Milliseconds: Double
    }

    /// Runs `command` `requests` times over `clients` connections, `pipeline` commands at a time;
    /// parses its `--csv` line.
    static func run(
        _ tools: RedisTools, port: Int, clients: Int, pipeline: Int, requests: Int, command: [String]
    ) async throws -> Result {
        let arguments =
            [
                "-h", "127.0.0.1", "-p", String(port), "-c", String(clients), "-P", String(pipeline),
                "-n", String(requests), "--csv",
            ] + command
        let run = try await runChild("redis-benchmark", tools.benchmark, arguments: arguments, capture: .standardOutput)
        guard run.status == 0 else { throw BenchError("redis-benchmark exited with \(run.status)") }
        return try parse(run.output)
    }

    /// The rate and p50 of the last CSV row: `"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",…`.
    static func parse(_ output: String) throws -> Result {
        guard let row = output.split(whereSeparator: \.isNewline).last(where: { !$0.hasPrefix("\"test\"") }) else {
            throw BenchError("redis-benchmark printed no result")
        }
        // The test name may hold commas; the figures are the last seven quoted fields.
        let fields = row.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        guard fields.count >= 8, let rate = Double(fields[fields.count - 7]), let p50 = Double(fields[fields.count - 4])
        else { throw BenchError("unreadable redis-benchmark line: \(row)") }
        return Result(rate: rate, p50Milliseconds: p50)
    }

    /// Requests for one measurement of about `duration`, from a rate measured first.
    static func requests(toLast duration: Duration, at rate: Double) -> Int {
        max(1_000, Int(rate * duration.inSeconds))
    }
}
