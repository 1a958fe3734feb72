import Foundation
import LongLinkTestSupport
import LongLinkWire

/// Generates random frames of every kind from a seed, leaning towards the values that break
/// codecs: zero, the edges of each varint length, the maxima, empty and long strings, multi-byte
/// UTF-8, large payloads.
struct FrameGenerator {
    var random: SplitMix64
    /// The largest payload `payload()` may produce.
    var maxPayloadBytes: Int

    init(seed: UInt64, maxPayloadBytes: Int = 70_000) {
        random = SplitMix64(seed: seed)
        self.maxPayloadBytes = maxPayloadBytes
    }

    /// The number of frame kinds `frame(kind:)` knows (every case of `Frame`).
    static let kindCount = 12

    mutating func frame() -> Frame {
        frame(kind: Int.random(in: 0..<Self.kindCount, using: &random))
    }

    mutating func frame(kind: Int) -> Frame {
        switch kind {
        case 0:
            .hello(
                Frame.Hello(
                    version: uint32(), clientID: string(), heartbeatMilliseconds: uint32(), metadata: metadata()))
        case 1:
            .welcome(
                Frame.Welcome(
                    version: uint32(), serverID: string(), heartbeatMilliseconds: uint32(), maxFrameBytes: uint32(),
                    loadPermille: uint32(), dedupeWindowMilliseconds: uint32()))
        case 2:
            .request(
                {
                    var request = Frame.Request(
                        requestID: string(), method: string(), payload: payload(), timeoutMilliseconds: uint32(),
                        metadata: metadata())
                    request.resent = Bool.random(using: &random)
                    return request
                }())
        case 3:
            .response(
                Frame.Response(
                    requestID: string(), payload: payload(),
                    status: Bool.random(using: &random)
                        ? Frame.Status(code: StatusCode(rawValue: uint32()), message: string()) : nil))
        case 4:
            .cancel(Frame.Cancel(requestID: string()))
        case 5:
            .push(Frame.Push(seq: uint64(), topic: string(), payload: payload(), epoch: uint64()))
        case 6:
            .ack(Frame.Ack(seqs: seqs(), epoch: uint64()))
        case 7:
            .sync(Frame.Sync())
        case 8:
            .ping(Frame.Ping(nonce: uint64()))
        case 9:
            .pong(Frame.Pong(nonce: uint64(), loadPermille: uint32()))
        case 10:
            .goAway(
                Frame.GoAway(
                    code: StatusCode(rawValue: uint32()), reason: string(), reconnect: Bool.random(using: &random),
                    retryAfterMilliseconds: uint32()))
        default:
            .unrecognized
        }
    }

    /// A value near an interesting edge half of the time, otherwise random bits of a random width.
    mutating func uint64() -> UInt64 {
        let edges: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 32, UInt64(Int64.max), UInt64.max - 1, .max]
        if Bool.random(using: &random) {
            return edges.randomElement(using: &random)!
        }
        let width = UInt64.random(in: 0...64, using: &random)
        let bits = random.next()
        return width == 64 ? bits : bits & ((1 << width) - 1)
    }

    mutating func uint32() -> UInt32 {
        let edges: [UInt32] = [0, 1, 127, 128, 1000, 65_535, 4_194_304, .max]
        if Bool.random(using: &random) {
            return edges.randomElement(using: &random)!
        }
        return UInt32(truncatingIfNeeded: uint64())
    }

    /// A string of 1- to 4-byte UTF-8 scalars (and combining marks), empty a quarter of the time.
    mutating func string(maxScalars: Int = 40) -> String {
        let lengthChoice = Int.random(in: 0..<8, using: &random)
        let count =
            switch lengthChoice {
            case 0, 1: 0
            case 7: Int.random(in: 0...maxScalars * 50, using: &random)
            default: Int.random(in: 1...maxScalars, using: &random)
            }
        var scalars = String.UnicodeScalarView()
        for _ in 0..<count {
            scalars.append(scalar())
        }
        return String(scalars)
    }

    /// Where generated scalars come from, one range picked at random per scalar. Built once: the
    /// generator makes millions of scalars, and an array per scalar made the fuzz tests hold both
    /// of the test process's cooperative threads for seconds, stalling every other test.
    private static let scalarRanges: [ClosedRange<UInt32>] = [
        0x00...0x7F,  // ASCII, including NUL and controls
        0x20...0x7E,  // printable ASCII
        0x80...0x7FF,  // 2 bytes
        0x300...0x36F,  // combining marks
        0x800...0xD7FF,  // 3 bytes below the surrogates
        0xE000...0xFFFF,  // 3 bytes above the surrogates
        0x1_0000...0x10_FFFF,  // 4 bytes
    ]

    private mutating func scalar() -> Unicode.Scalar {
        let range = Self.scalarRanges.randomElement(using: &random)!
        return Unicode.Scalar(UInt32.random(in: range, using: &random))!
    }

    mutating func payload() -> [UInt8] {
        let count =
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1: 0
            case 9: Int.random(in: 0...maxPayloadBytes, using: &random)
            default: Int.random(in: 1...64, using: &random)
            }
        return bytes(count: count)
    }

    mutating func bytes(count: Int) -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(count)
        while result.count < count {
            var word = random.next()
            for _ in 0..<Swift.min(8, count - result.count) {
                result.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return result
    }

    mutating func metadata() -> [String: String] {
        var map: [String: String] = [:]
        let count =
            switch Int.random(in: 0..<6, using: &random) {
            case 0, 1: 0
            case 5: Int.random(in: 0...200, using: &random)
            default: Int.random(in: 1...4, using: &random)
            }
        for _ in 0..<count {
            map[string(maxScalars: 12)] = string()
        }
        return map
    }

    mutating func seqs() -> [UInt64] {
        let count =
            switch Int.random(in: 0..<5, using: &random) {
            case 0: 0
            case 4: Int.random(in: 0...5_000, using: &random)
            default: Int.random(in: 1...10, using: &random)
            }
        return (0..<count).map { _ in uint64() }
    }
}

extension Frame {
    /// The frame with its varint length prefix, as one array.
    var delimitedBytes: [UInt8] {
        var bytes: [UInt8] = []
        encodeDelimited(into: &bytes)
        return bytes
    }

    /// The frame's encoding, as one array.
    var encodedBytes: [UInt8] {
        var bytes: [UInt8] = []
        encode(into: &bytes)
        return bytes
    }
}

/// Parses a compact hex string such as `"4a 02 08 01"` (spaces ignored).
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    precondition(digits.count.isMultiple(of: 2), "odd number of hex digits")
    var result: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        result.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return result
}

/// Runs `body` and returns the `WireFormatError` it threw, or nil when it did not throw.
func wireError<T>(_ body: () throws(WireFormatError) -> T) -> WireFormatError? {
    do throws(WireFormatError) {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

extension FrameDecoder {
    /// The batch path over a slice of an array. (A typed-throws closure handed straight to
    /// `withUnsafeBytes` crashes the 6.3 compiler's IR generation, hence the `Result`.)
    mutating func decode(_ chunk: some ContiguousBytes, into frames: inout [Frame]) throws(WireFormatError) {
        let result = chunk.withUnsafeBytes { bytes in
            Result { () throws(WireFormatError) in try decode(bytes, into: &frames) }
        }
        try result.get()
    }
}
