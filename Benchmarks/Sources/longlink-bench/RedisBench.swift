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

// The benchmark's own `redis-server`s are the shared launcher's (`LocalRedisServer` in
// LongLinkCLISupport, compiled here as BenchCLISupport): a free port, a temporary directory, no
// persistence unless asked (`--appendonly no`: the figures are Redis's in-memory rate), stopped by
// its pid; `RedisProbe` asks them questions apart from LongLinkRedis's client.
extension LocalRedisServer {
    /// Its process id.
    var pid: Int32 { processIdentifier }

    /// Runs `body` with a server started with `extraArguments` and stops it afterwards, also when
    /// `body` throws.
    static func with<Value>(
        _ tools: RedisTools, extraArguments: [String] = [], _ body: (LocalRedisServer) async throws -> Value
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

    /// Starts one with `extraArguments` added (later ones win: `--appendonly yes` turns the AOF on).
    static func start(_ tools: RedisTools, extraArguments: [String] = []) async throws -> LocalRedisServer {
        try await start(
            binary: tools.server, appendOnly: false, freePort: { try await freePort() },
            arguments: { _ in extraArguments })
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
