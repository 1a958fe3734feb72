import Foundation
import Testing

@testable import longlink_bench

@Suite("longlink-bench fleet")
struct FleetBenchTests {
    /// Whether the run against a real Redis happens: always under CI (where missing binaries must
    /// fail it), elsewhere when redis-server and redis-benchmark are there; else one line says why.
    static let redisPresent: Bool = {
        if ProcessInfo.processInfo.environment["CI"] != nil { return true }
        if case .failure(let missing) = RedisTools.find(in: nil) {
            print("LongLinkBenchTests: \(missing); the fleet run is skipped")
            return false
        }
        return true
    }()

    /// Every figure `bench fleet` reports.
    static let fleetKeys = [
        "fleet.redis_benchmark.xadd.pipelined", "fleet.redis_benchmark.xadd.connections_50",
        "fleet.redis_benchmark.produce_script.pipelined", "fleet.redis_benchmark.produce_script.connections_50",
        "fleet.pushes.throughput.vs_pipelined", "fleet.pushes.throughput.vs_connections_50",
        "fleet.pushes.throughput.vs_produce_script", "fleet.pushes.published",
        "fleet.rpc.in_flight_1.throughput", "fleet.rpc.in_flight_64.throughput", "fleet.rpc.latency.p50",
        "fleet.failover.first_success",
        "fleet.ops_per_push.produce", "fleet.ops_per_push.read", "fleet.ops_per_push.ack",
        "fleet.ops_per_push.round_trips", "fleet.ops_per_push.xdel", "fleet.ops_per_push.commands",
        "fleet.redis_cpu.push", "fleet.process_cpu.push", "fleet.ops_per_request.script_calls",
        "fleet.ops_per_request.commands", "fleet.redis_cpu.request",
        "fleet.connections_per_server", "fleet.redis_cpu.xadd", "fleet.redis_cpu.produce_script",
    ]

    /// Without the Redis binaries nothing is measured: one line on standard error, no table, exit 1.
    @Test func missingRedisFailsWithOneLine() async throws {
        let directory = "/nonexistent-\(UUID().uuidString)"
        let outcome = try await BenchCommandTests.bench(["fleet", "--redis-bin", directory])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        let lines = outcome.standardError.split(separator: "\n")
        #expect(lines.count == 1, "stderr: \(outcome.standardError)")
        #expect(lines.first?.hasPrefix("longlink-bench fleet: redis-server not found in \(directory)") == true)
        #expect(outcome.standardError.contains("Debian package redis-server"))
    }

    @Test func helpShowsTheRedisOption() async throws {
        let outcome = try await BenchCommandTests.bench(["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.contains("--redis-bin DIR"))
        #expect(!BenchCommand.scenarios.contains("fleet"), "fleet needs redis-server: not part of all")
    }

    @Test func redisBenchmarkCSVIsRead() throws {
        let output = """
            "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
            "XADD s * t a,b d ZZ e 1","68399.45","0.228","0.032","0.039","0.111","6.671","17.327"

            """
        let result = try RedisBenchmarkTool.parse(output)
        #expect(result.rate == 68399.45)
        #expect(result.p50Milliseconds == 0.039)
        #expect(throws: BenchError.self) { try RedisBenchmarkTool.parse("\"test\",\"rps\"\n") }
        #expect(throws: BenchError.self) {
            try RedisBenchmarkTool.parse("\"XADD\",\"fast\",\"1\",\"2\",\"3\",\"4\",\"5\",\"6\"")
        }
        #expect(RedisBenchmarkTool.requests(toLast: .seconds(2), at: 50_000) == 100_000)
        #expect(RedisBenchmarkTool.requests(toLast: .milliseconds(1), at: 10) == 1_000)
    }

    /// The captured produce command keeps its keys and arguments, with the principal's bounds lifted.
    @Test func produceCommandIsUnbounded() {
        let captured = ["EVALSHA", "abc", "2", "m", "s", "bench", "ZZ", "7", "100000", "1073741824", "9", "c"]
        let command = FleetBenchmark.unbounded(captured)
        #expect(command.count == captured.count)
        #expect(Int(command[8])! > 100_000 && Int(command[9])! > 1 << 30)
        #expect(Array(command[..<8]) == Array(captured[..<8]) && Array(command[10...]) == Array(captured[10...]))
    }

    /// A short run on a real Redis: every row, and Redis's work counted where it is fixed by design
    /// (one claim and one finish per request; at most one produce script per push, fewer when
    /// concurrent produces commit together; at least the XADD of each push executed in Redis).
    @Test(.enabled(if: redisPresent)) func fleetJSONHasEveryFigure() async throws {
        let outcome = try await BenchCommandTests.bench(
            ["fleet", "--duration", "0.2", "--runs", "1", "--json"], within: .seconds(180))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        #expect(Set(results.keys) == Set(Self.fleetKeys))
        func value(_ key: String) throws -> Double {
            try #require((results[key] as? [String: Any])?["value"] as? Double, "\(key)")
        }
        // Reads, acks and XDEL may round to nothing: reads come in pages, acks in batches, and the
        // oldest pushes are acknowledged with one XTRIM.
        for key in Self.fleetKeys
        where !key.hasPrefix("fleet.ops_per_push.read") && !key.hasSuffix(".ack") && !key.hasSuffix(".xdel") {
            #expect(try value(key) > 0, "\(key)")
        }
        // A claim and a stored reply each, in batches: at most two script calls per request.
        let calls = try value("fleet.ops_per_request.script_calls")
        #expect(calls > 0 && calls <= 2.05, "script calls per request: \(calls)")
        let produce = try value("fleet.ops_per_push.produce")
        #expect(produce > 0 && produce <= 1.05, "produce per push: \(produce)")
        #expect(try value("fleet.ops_per_push.commands") >= 1)
        #expect(try value("fleet.connections_per_server") >= 2)
        let pushes = try #require(results["fleet.pushes.throughput.vs_pipelined"] as? [String: Any])
        #expect((pushes["ratio"] as? Double ?? 0) > 0)
        #expect(pushes["met"] is Bool)
        #expect((outcome.standardError).contains("redis-server pid"))
    }
}
