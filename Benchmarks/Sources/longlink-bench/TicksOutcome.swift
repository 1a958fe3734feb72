import Foundation

/// One tick the consumer took: when, and which update of which symbol.
struct TickTaken: Sendable {
    var time: Int64
    var stamp: Int64
    var symbol: Int32
    var update: Int32
}

/// What one side's consumer got out of one feed, figured the same way on both sides (main.go's
/// `analyse` is this function in Go).
struct TicksOutcome: Sendable {
    /// Ages of the ticks taken in the window, in microseconds.
    var ageP50: Double
    var ageP99: Double
    var ageMax: Double
    /// Ticks taken in the window.
    var taken: Int
    /// Symbols whose longest gap was above ``TicksOutcome/starvationBound``.
    var starved: Int
    /// The longest time any symbol went without an update taken while a newer one existed, in
    /// milliseconds.
    var longestGap: Double
    /// The longest time between two takes in the window, in milliseconds: a consumer that did
    /// not run (a loaded machine) or was not woken owes every symbol that long.
    var longestPause: Double

    /// A price owed this long is stale on any screen; it is 10 times what one full round of the
    /// 5,000 symbols at 20 µs a tick takes (100 ms), the most a by-symbol conflation can owe.
    static let starvationBound: Int64 = 1_000_000_000

    /// `produced[symbol]` holds the stamps of the symbol's updates (index = update number);
    /// `takes` is in the order the consumer took them; the window is in wall-clock nanoseconds.
    ///
    /// A symbol owes an update from the stamp of the first update after the last one taken (or
    /// the window's start) until the next take (or the window's end): its gap. Ages count the
    /// takes inside the window.
    static func analyse(produced: [[Int64]], takes: [TickTaken], window: ClosedRange<Int64>) -> TicksOutcome {
        var ages: [Double] = []
        ages.reserveCapacity(takes.count)
        var next = [Int](repeating: 0, count: produced.count)
        var longest = [Int64](repeating: 0, count: produced.count)
        var pause: Int64 = 0
        var previous: Int64?
        func owe(_ symbol: Int, until end: Int64) {
            let stamps = produced[symbol]
            guard next[symbol] < stamps.count else { return }
            let start = max(stamps[next[symbol]], window.lowerBound)
            longest[symbol] = max(longest[symbol], min(end, window.upperBound) - start)
        }
        for take in takes {
            let symbol = Int(take.symbol)
            guard symbol < produced.count, Int(take.update) >= next[symbol] else { continue }
            owe(symbol, until: take.time)
            next[symbol] = Int(take.update) + 1
            if window.contains(take.time) {
                ages.append(Double(take.time - take.stamp) / 1e3)
                if let previous { pause = max(pause, take.time - previous) }
                previous = take.time
            }
        }
        for symbol in produced.indices { owe(symbol, until: window.upperBound) }
        ages.sort()
        return TicksOutcome(
            ageP50: BenchStats.percentile(ages, 0.5), ageP99: BenchStats.percentile(ages, 0.99),
            ageMax: ages.last ?? .nan, taken: ages.count, starved: longest.filter { $0 > starvationBound }.count,
            longestGap: Double(longest.max() ?? 0) / 1e6, longestPause: Double(pause) / 1e6)
    }
}
