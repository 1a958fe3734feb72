import LongLink
import LongLinkTesting

// The realistic reply of the payloads scenario: a candlestick chart as the trading app fetches it,
// encoded in the protobuf binary format by hand (LongLink does not depend on SwiftProtobuf) for
//
//     message Candle { int64 time = 1; double open = 2; double high = 3; double low = 4;
//                      double close = 5; int64 volume = 6; }
//     message CandleChart { string symbol = 1; uint32 interval_seconds = 2; repeated Candle candles = 3; }
//     message CandlesRequest { string symbol = 1; uint32 count = 2; }
//
// The chart conforms to ``LongLinkBinaryMessage`` as generated code does through the bridge the
// docs give, so that replies take the binary-message path, not the Codable one.

/// One minute of trading: its start (Unix seconds), prices and volume.
struct Candle: Sendable, Hashable {
    var time: Int64 = 0
    var open: Double = 0
    var high: Double = 0
    var low: Double = 0
    var close: Double = 0
    var volume: Int64 = 0
}

/// A symbol's candles, oldest first.
struct CandleChart: Sendable, Hashable, LongLinkBinaryMessage {
    var symbol = ""
    var intervalSeconds: UInt32 = 60
    var candles: [Candle] = []

    init(symbol: String = "", intervalSeconds: UInt32 = 60, candles: [Candle] = []) {
        self.symbol = symbol
        self.intervalSeconds = intervalSeconds
        self.candles = candles
    }

    init(serializedBytes bytes: [UInt8]) throws {
        try ProtobufReader.readFields(of: bytes[...]) { field, wireType, reader in
            switch (field, wireType) {
            case (1, .lengthDelimited): symbol = String(decoding: try reader.delimited(), as: UTF8.self)
            case (2, .varint): intervalSeconds = UInt32(truncatingIfNeeded: try reader.varint())
            case (3, .lengthDelimited): candles.append(try Self.candle(try reader.delimited()))
            default: return false
            }
            return true
        }
    }

    private static func candle(_ bytes: ArraySlice<UInt8>) throws -> Candle {
        var candle = Candle()
        try ProtobufReader.readFields(of: bytes) { field, wireType, reader in
            switch (field, wireType) {
            case (1, .varint): candle.time = Int64(bitPattern: try reader.varint())
            case (2, .fixed64): candle.open = Double(bitPattern: try reader.fixed64())
            case (3, .fixed64): candle.high = Double(bitPattern: try reader.fixed64())
            case (4, .fixed64): candle.low = Double(bitPattern: try reader.fixed64())
            case (5, .fixed64): candle.close = Double(bitPattern: try reader.fixed64())
            case (6, .varint): candle.volume = Int64(bitPattern: try reader.varint())
            default: return false
            }
            return true
        }
        return candle
    }

    func serializedBytes() -> [UInt8] {
        var writer = ProtobufWriter()
        writer.string(symbol, field: 1)
        writer.varintField(UInt64(intervalSeconds), field: 2)
        var body = ProtobufWriter()
        for candle in candles {
            body.bytes.removeAll(keepingCapacity: true)
            body.varintField(UInt64(bitPattern: candle.time), field: 1)
            body.double(candle.open, field: 2)
            body.double(candle.high, field: 3)
            body.double(candle.low, field: 4)
            body.double(candle.close, field: 5)
            body.varintField(UInt64(bitPattern: candle.volume), field: 6)
            writer.delimited(body.bytes, field: 3)
        }
        return writer.bytes
    }

    /// `count` minute-candles of a random walk from a fixed seed: prices in cents around 187 with
    /// a few cents of movement a minute, volumes from 2,000 to 42,000, one minute apart.
    static func sample(symbol: String, count: Int, seed: UInt64 = 24) -> CandleChart {
        var random = SplitMix64(seed: seed)
        var price = 187.25
        let start: Int64 = 1_764_599_400
        let candles = (0..<count).map { index in
            let open = price
            let close = cents(max(1, open + Double.random(in: -0.12...0.12, using: &random)))
            price = close
            return Candle(
                time: start + Int64(index) * 60, open: open,
                high: cents(max(open, close) + Double.random(in: 0...0.08, using: &random)),
                low: cents(min(open, close) - Double.random(in: 0...0.08, using: &random)), close: close,
                volume: 2_000 + Int64(random.next(below: 40_000)))
        }
        return CandleChart(symbol: symbol, candles: candles)
    }

    private static func cents(_ value: Double) -> Double { (value * 100).rounded() / 100 }
}

/// The request for a chart: its symbol and how many candles. It encodes itself as protobuf
/// (the server of the scenario answers every request with the same chart, so nothing decodes it).
struct CandlesRequest: LongLinkRequest {
    typealias Reply = CandleChart
    static let method = "candles"

    var symbol = ""
    var count: UInt32 = 0

    init(symbol: String, count: UInt32) {
        self.symbol = symbol
        self.count = count
    }

    func encodePayload(with codec: any PayloadCodec) -> [UInt8] {
        var writer = ProtobufWriter()
        writer.string(symbol, field: 1)
        writer.varintField(UInt64(count), field: 2)
        return writer.bytes
    }
}

/// The protobuf wire types these messages use.
enum ProtobufWireType: UInt64 {
    case varint = 0
    case fixed64 = 1
    case lengthDelimited = 2
    case fixed32 = 5
}

/// Appends protobuf fields; zero and empty scalars are left out, as proto3 does.
struct ProtobufWriter {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var remaining = value
        repeat {
            let low = UInt8(remaining & 0x7f)
            remaining >>= 7
            bytes.append(remaining == 0 ? low : low | 0x80)
        } while remaining != 0
    }

    mutating func key(_ field: Int, _ wireType: ProtobufWireType) {
        varint(UInt64(field) << 3 | wireType.rawValue)
    }

    mutating func varintField(_ value: UInt64, field: Int) {
        guard value != 0 else { return }
        key(field, .varint)
        varint(value)
    }

    mutating func double(_ value: Double, field: Int) {
        guard value != 0 else { return }
        key(field, .fixed64)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func delimited(_ value: [UInt8], field: Int) {
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String, field: Int) {
        guard !value.isEmpty else { return }
        delimited(Array(value.utf8), field: field)
    }
}

/// Reads protobuf fields; anything malformed throws.
struct ProtobufReader {
    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        index = bytes.startIndex
    }

    /// Calls `read` with every field of `bytes` in turn, positioned at its value; `read` returns
    /// false for a field it does not know, which is then skipped (as protobuf requires).
    static func readFields(
        of bytes: ArraySlice<UInt8>, _ read: (Int, ProtobufWireType, inout ProtobufReader) throws -> Bool
    ) throws {
        var reader = ProtobufReader(bytes)
        while let (field, wireType) = try reader.nextKey() {
            if try !read(field, wireType, &reader) { try reader.skip(wireType) }
        }
    }

    /// The next field's number and wire type; nil at the end.
    mutating func nextKey() throws -> (Int, ProtobufWireType)? {
        guard index < bytes.endIndex else { return nil }
        let key = try varint()
        guard let wireType = ProtobufWireType(rawValue: key & 7), key >> 3 > 0 else {
            throw BenchError("protobuf: unsupported key \(key)")
        }
        return (Int(key >> 3), wireType)
    }

    mutating func varint() throws -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 7) {
            guard index < bytes.endIndex else { break }
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { return value }
        }
        throw BenchError("protobuf: truncated or overlong varint")
    }

    mutating func fixed64() throws -> UInt64 {
        // Little-endian on the wire: the last byte is the most significant.
        try take(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    mutating func delimited() throws -> ArraySlice<UInt8> {
        try take(Int(exactly: try varint()) ?? Int.max)
    }

    mutating func skip(_ wireType: ProtobufWireType) throws {
        switch wireType {
        case .varint: _ = try varint()
        case .fixed64: _ = try take(8)
        case .lengthDelimited: _ = try delimited()
        case .fixed32: _ = try take(4)
        }
    }

    private mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count <= bytes.endIndex - index else { throw BenchError("protobuf: field runs past the end") }
        defer { index += count }
        return bytes[index..<index + count]
    }
}
