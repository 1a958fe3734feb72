import Foundation
import LongLinkTesting

/// The feed of `longlink-bench ticks`, the same on both sides (Benchmarks/Peers/nats/main.go draws
/// it with the same generator, seed and table): `symbols` symbols, each update's symbol drawn from
/// a Zipf distribution (weight 1/rank^`exponent`) by SplitMix64 from a fixed seed, on topic
/// `ticks.S0000` … `ticks.S4999`, paced to `rate` updates per second.
///
/// A payload is 16 bytes, little-endian: the server's stamp (wall-clock nanoseconds, the producer
/// and the consumer share the machine's clock), the symbol, and the symbol's own update number.
struct TicksFeed: Sendable {
    static let symbols = 5_000
    static let exponent = 1.0
    static let seed: UInt64 = 48
    static let rate = 200_000.0
    /// The producer's pause between batches: each batch makes up what the rate owes by then.
    static let pause = Duration.microseconds(200)
    static let topicPrefix = "ticks."
    static let pattern = "ticks.*"
    static let payloadSize = 16

    /// `ticks.S0042` for symbol 42.
    static let topics: [String] = (0..<symbols).map { topicPrefix + "S" + String(format: "%04d", $0) }

    /// The cumulative weights, normalised so that the last is 1.
    private let cumulative: [Double]
    private var random: SplitMix64

    init(symbols: Int = TicksFeed.symbols, exponent: Double = TicksFeed.exponent, seed: UInt64 = TicksFeed.seed) {
        var sum = 0.0
        var cumulative = [Double]()
        cumulative.reserveCapacity(symbols)
        for rank in 1...symbols {
            sum += 1 / pow(Double(rank), exponent)
            cumulative.append(sum)
        }
        self.cumulative = cumulative.map { $0 / sum }
        random = SplitMix64(seed: seed)
    }

    /// The next update's symbol: the first whose cumulative weight exceeds a uniform draw in [0, 1).
    mutating func nextSymbol() -> Int {
        let draw = Double(random.next() >> 11) * 0x1p-53
        var low = 0
        var high = cumulative.count - 1
        while low < high {
            let middle = (low + high) / 2
            if cumulative[middle] > draw { high = middle } else { low = middle + 1 }
        }
        return low
    }

    static func payload(stamp: Int64, symbol: Int, update: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payloadSize)
        func append(_ value: UInt64, bytes count: Int) {
            for index in 0..<count { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * index))) }
        }
        append(UInt64(bitPattern: stamp), bytes: 8)
        append(UInt64(symbol), bytes: 4)
        append(UInt64(update), bytes: 4)
        return bytes
    }

    /// The stamp, symbol and update number of `payload`; nil when it is not a tick's.
    static func decode(_ payload: [UInt8]) -> (stamp: Int64, symbol: Int, update: Int)? {
        guard payload.count == payloadSize else { return nil }
        func field<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
            var value: T = 0
            for index in 0..<MemoryLayout<T>.size { value |= T(payload[offset + index]) << (8 * index) }
            return value
        }
        let symbol = Int(field(8, UInt32.self))
        guard symbol < symbols else { return nil }
        return (Int64(bitPattern: field(0, UInt64.self)), symbol, Int(field(12, UInt32.self)))
    }

    /// Wall-clock nanoseconds (CLOCK_REALTIME, as Go's `time.Now().UnixNano()`).
    static func wallClock() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Monotonic nanoseconds.
    static func monotonic() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Keeps the thread busy for `nanoseconds`: the app's work per tick.
    static func spin(nanoseconds: Int64) {
        let end = monotonic() + nanoseconds
        while monotonic() < end {}
    }
}
