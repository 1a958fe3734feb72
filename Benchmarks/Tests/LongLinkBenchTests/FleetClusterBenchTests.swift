import Foundation
import Testing

@testable import longlink_bench

@Suite("longlink-bench fleet --cluster")
struct FleetClusterBenchTests {
    /// Every figure `bench fleet --cluster` reports.
    static let keys =
        [
            "fleet.cluster.pushes.one_primary", "fleet.cluster.pushes.three_primaries",
            "fleet.cluster.rpc.one_primary", "fleet.cluster.rpc.three_primaries",
            "fleet.cluster.redis_cpu.push.one_primary", "fleet.cluster.failover.produce",
            "fleet.cluster.failover.request", "fleet.cluster.failover.promotion",
        ] + (1...3).map { "fleet.cluster.redis_cpu.push.three_primaries.primary_\($0)" }
        + ["one_primary", "three_primaries"].flatMap { shape in
            [
                "fleet.cluster.replica_cpu.push.\(shape)", "fleet.cluster.server_cpu.push.\(shape)",
                "fleet.cluster.pushes_per_produce.\(shape)",
                "fleet.cluster.redis_cpu.request.\(shape)", "fleet.cluster.server_cpu.request.\(shape)",
            ]
        }

    /// `--cluster` belongs to the fleet scenario: elsewhere a usage error, before anything runs.
    @Test func clusterOutsideFleetIsAUsageError() async throws {
        let outcome = try await BenchCommandTests.bench(["rpc", "--cluster"])
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.contains("--cluster is for the fleet scenario only"))
    }

    /// A short run on two real clusters: every row positive, the three-primary rows against the
    /// one-primary ones, every primary storing pushes, and the failover no sooner than the
    /// cluster's node timeout (2 s): a success before it would mean the killed primary did not
    /// serve the principal timed.
    @Test(.enabled(if: FleetBenchTests.redisPresent)) func clusterJSONHasEveryFigure() async throws {
        let outcome = try await BenchCommandTests.bench(
            ["fleet", "--cluster", "--duration", "0.5", "--runs", "1", "--json"], within: .seconds(120))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        #expect(Set(results.keys) == Set(Self.keys))
        func row(_ key: String) throws -> [String: Any] {
            try #require(results[key] as? [String: Any], "\(key)")
        }
        for key in Self.keys {
            let value = try #require(try row(key)["value"] as? Double, "\(key)")
            #expect(value > 0 && value.isFinite, "\(key): \(value)")
        }
        for key in ["fleet.cluster.pushes.three_primaries", "fleet.cluster.rpc.three_primaries"] {
            #expect((try row(key)["ratio"] as? Double ?? 0) > 0, "\(key)")
        }
        for key in ["fleet.cluster.failover.produce", "fleet.cluster.failover.request"] {
            let value = try #require(try row(key)["value"] as? Double)
            #expect(value >= 2_000 && value < 30_000, "\(key): \(value) ms")
        }
        #expect(outcome.standardError.contains("(primaries)"))
        #expect(outcome.standardError.contains("(replicas)"))
    }
}
