import Foundation
import Testing

@testable import longlink_bench

/// `longlink-bench ticks`: the feed is the same on both sides, and a short run gives every row.
@Suite("longlink-bench ticks")
struct TicksBenchTests {
    static let keys = [
        "ticks.produced", "ticks.age.p50", "ticks.age.p99", "ticks.age.max", "ticks.starved", "ticks.taken",
        "ticks.conflated", "ticks.cpu.server", "ticks.cpu.client", "ticks.disconnections",
    ]

    /// The seeded feed draws what main.go's generator draws (its first symbols, printed by the Go
    /// code), the same in every run, and skewed: the first symbol is the most frequent.
    @Test func theFeedIsSeededAndSkewed() {
        var first = TicksFeed()
        var second = TicksFeed()
        var fromGo = TicksFeed()
        #expect((0..<12).map { _ in fromGo.nextSymbol() } == [0, 233, 68, 29, 4, 0, 158, 55, 3, 2, 9, 31])
        var counts = [Int](repeating: 0, count: TicksFeed.symbols)
        for _ in 0..<100_000 {
            let symbol = first.nextSymbol()
            #expect(symbol == second.nextSymbol())
            counts[symbol] += 1
        }
        // Zipf with exponent 1 over 5,000 symbols: the first takes 1/H(5000), about 11 %.
        #expect((10_000...12_000).contains(counts[0]), "\(counts[0])")
        #expect(counts[0] > 1_500 * max(1, counts[4_999]))
    }

    /// A symbol owes from the first update after the one taken (not from the take), an update
    /// never taken owes to the window's end, and a symbol is starved past the bound only.
    @Test func gapsCountFromTheFirstUpdateOwed() {
        let produced: [[Int64]] = [[0, 100, 200], [900]]
        let takes = [
            TickTaken(time: 10, stamp: 0, symbol: 0, update: 0),
            TickTaken(time: 260, stamp: 200, symbol: 0, update: 2),
        ]
        let outcome = TicksOutcome.analyse(produced: produced, takes: takes, window: 0...1_000)
        // Symbol 0 owed from 100 (update 1) to 260; symbol 1 from 900 to the end, 1,000.
        #expect(outcome.longestGap == Double(160) / 1e6)
        #expect(outcome.taken == 2)
        #expect(outcome.ageP50 == 0.01)
        #expect(outcome.ageMax == 0.06)
        #expect(outcome.starved == 0)
        let second: Int64 = 1_000_000_000
        let starved = TicksOutcome.analyse(
            produced: [[0, second / 2], [second]], takes: [TickTaken(time: 10, stamp: 0, symbol: 0, update: 0)],
            window: 0...(2 * second))
        // Symbol 0 owes 1.5 s, symbol 1 exactly the bound (not starved).
        #expect(starved.starved == 1)
    }

    /// A short run: every row, with a baseline when NATS is installed; nothing disconnects.
    @Test func everyRowIsReported() async throws {
        let outcome = try await BenchProcess.run(
            ["ticks", "--duration", "0.3", "--runs", "1", "--json"], within: .seconds(300))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        let results = try #require(object["results"] as? [String: Any])
        #expect(Set(results.keys) == Set(Self.keys))
        let nats = PeersBenchTests.natsPresent
        for key in Self.keys {
            let row = try #require(results[key] as? [String: Any], "\(key)")
            #expect(row["value"] is Double, "\(key): \(row)")
            #expect((row["baseline"] != nil) == nats, "\(key): \(row)")
        }
        for key in ["ticks.produced", "ticks.taken", "ticks.age.p50"] {
            #expect(((results[key] as? [String: Any])?["value"] as? Double ?? 0) > 0, "\(key)")
        }
        #expect((results["ticks.disconnections"] as? [String: Any])?["value"] as? Double == 0)
    }
}
