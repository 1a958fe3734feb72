import Foundation
import Testing

@testable import longlink_bench

/// The rows against Redis's `PING` that `rpc` and `server` add when Redis is installed.
@Suite("longlink-bench Redis PING rows")
struct RedisPingBenchTests {
    static func settings(redis directory: String? = nil) -> BenchSettings {
        BenchSettings(duration: .milliseconds(200), runs: 1, redisDirectory: directory)
    }

    /// Without the binaries the rows are skipped: a note says why, no figure, no failure.
    @Test func missingRedisSkipsTheRowsWithANote() async throws {
        let directory = "/nonexistent-\(UUID().uuidString)"
        var report = BenchReport(command: "test", runs: 1, duration: 0.2)
        try await RedisPing.compareRPC(Self.settings(redis: directory), into: &report)
        try await RedisPing.compareServer(Self.settings(redis: directory), into: &report)
        #expect(report.figures.isEmpty)
        #expect(report.notes.count == 2, "\(report.notes)")
        let skipped = "rpc: Redis PING rows skipped: redis-server not found in \(directory)"
        #expect(report.notes.first?.hasPrefix(skipped) == true, "\(report.notes)")
        #expect(report.notes.last?.hasPrefix("server: Redis PING rows skipped: ") == true)
        #expect(report.notes.allSatisfy { $0.contains("the Redis PING comparison needs it") })
    }

    /// With Redis, `server` names its row as the scripts read it: the bare client against
    /// our server at 64 in flight, Redis's `PING -P 64` as its baseline, and their ratio.
    @Test(.enabled(if: FleetBenchTests.redisPresent)) func serverRowIsNamedAndHasItsRatio() async throws {
        var report = BenchReport(command: "test", runs: 1, duration: 0.2)
        try await RedisPing.compareServer(Self.settings(), into: &report)
        #expect(report.notes.isEmpty, "\(report.notes)")
        let figure = try #require(report.figures.first)
        #expect(report.figures.count == 1)
        #expect(figure.key == "server.redis_ping.pipelined_64")
        #expect(figure.samples.count == 1 && figure.samples[0] > 0)
        #expect((figure.baseline ?? 0) > 0 && (figure.ratio ?? 0) > 0)
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let row = try #require((json["results"] as? [String: Any])?["server.redis_ping.pipelined_64"] as? [String: Any])
        #expect((row["ratio"] as? Double ?? 0) > 0)
    }
}
