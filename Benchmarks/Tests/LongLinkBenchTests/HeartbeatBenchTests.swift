import Foundation
import Testing

@testable import longlink_bench

/// `longlink-bench heartbeat`: a simulated day, so it runs in milliseconds and its figures are exact.
@Suite("longlink-bench heartbeat")
struct HeartbeatBenchTests {
    @Test func aSimulatedDayMeetsTheTargets() async throws {
        let outcome = try await BenchProcess.run(["heartbeat", "--runs", "1", "--json"], within: .seconds(60))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let (results, notes) = try PeersBenchTests.results(outcome)
        for key in ["heartbeat.pings_per_day", "heartbeat.silent_losses", "heartbeat.black_hole_request"] {
            let row = try #require(results[key] as? [String: Any], "\(key) missing")
            #expect(row["met"] as? Bool == true, "\(key): \(row)")
        }
        let pings = try #require(results["heartbeat.pings_per_day"] as? [String: Any])
        #expect((pings["ratio"] as? Double).map { $0 <= 0.2 } == true)
        #expect(notes.contains { $0.hasPrefix("heartbeat: simulated day") })
        #expect(!BenchCommand.scenarios.contains("heartbeat"), "a simulation: not part of all")
    }
}
