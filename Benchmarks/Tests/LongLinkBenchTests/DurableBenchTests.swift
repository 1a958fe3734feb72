import Foundation
import Testing

@testable import longlink_bench

@Suite("longlink-bench durable")
struct DurableBenchTests {
    /// Every figure `bench durable` reports.
    static let durableKeys: [String] = {
        var keys: [String] = []
        for producers in DurableBenchmark.concurrencies {
            keys += DurableBenchmark.redisModes.map { "durable.redis_xadd.\($0).producers_\(producers)" }
            keys += DurableBenchmark.Store.allCases.map { "durable.push.\($0.key).producers_\(producers)" }
            keys += DurableBenchmark.Store.allCases.map { "durable.store_append.\($0.key).producers_\(producers)" }
        }
        return keys + [
            "durable.disk_bytes_per_push", "durable.recovery.open_and_first_read",
            "durable.recovery.open_and_first_read_unverified", "durable.rpc.latency.p50",
            "durable.rpc.in_flight_64.throughput",
        ]
    }()

    @Test func keysAreTheOnesNamed() {
        #expect(Self.durableKeys.count == 2 * (2 + 4 + 4) + 5)
        #expect(Set(Self.durableKeys).count == Self.durableKeys.count)
        #expect(!BenchCommand.scenarios.contains("durable"), "durable needs redis-server: not part of all")
        #expect(BenchCommand.names.contains("durable"))
    }

    /// Without the Redis binaries nothing is measured: one line on standard error, exit 1.
    @Test func missingRedisFailsWithOneLine() async throws {
        let directory = "/nonexistent-\(UUID().uuidString)"
        let outcome = try await BenchCommandTests.bench(["durable", "--redis-bin", directory])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("longlink-bench durable: redis-server not found in \(directory)"))
    }

    /// A short run on a real Redis and the disk: every row with a positive value, the targets'
    /// ratios present, and the recovery store's bytes per push at least its payload's.
    @Test(.enabled(if: FleetBenchTests.redisPresent)) func durableJSONHasEveryFigure() async throws {
        let outcome = try await BenchCommandTests.bench(
            ["durable", "--duration", "0.2", "--runs", "1", "--json"], within: .seconds(300))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        #expect(Set(results.keys) == Set(Self.durableKeys))
        for key in Self.durableKeys {
            let value = try #require((results[key] as? [String: Any])?["value"] as? Double, "\(key)")
            #expect(value > 0, "\(key)")
        }
        let bytes = try #require((results["durable.disk_bytes_per_push"] as? [String: Any])?["value"] as? Double)
        #expect(bytes >= Double(DurableBenchmark.payload.count))
        for key in ["durable.push.every_commit.producers_64", "durable.push.interval_1s.producers_64"] {
            let figure = try #require(results[key] as? [String: Any])
            #expect((figure["ratio"] as? Double ?? 0) > 0, "\(key)")
            #expect(figure["met"] is Bool, "\(key)")
        }
        #expect(outcome.standardError.contains("redis-server pid"))
    }
}
