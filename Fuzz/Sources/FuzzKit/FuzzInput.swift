import LongLinkWire

/// A fuzzer's input read as a script: each call takes what it needs from the front.
///
/// An exhausted input reads as zeros, so every byte string is a valid script and libFuzzer's
/// mutations never waste a run on a parse error of the harness itself.
public struct FuzzInput {
    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    public init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    public var isAtEnd: Bool { index >= bytes.count }

    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    public mutating func bool() -> Bool { byte() & 1 == 1 }

    /// A number in `0..<bound` (`bound` at most 256), from one byte.
    public mutating func int(below bound: Int) -> Int { Int(byte()) % max(1, bound) }

    /// A base-128 varint, as the frames carry them: lets the fuzzer reach any 64-bit value, and a
    /// truncated one ends the input.
    public mutating func varint() -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 7) {
            let byte = byte()
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { break }
        }
        return value
    }

    /// A varint length, then that many bytes (fewer when the input ends first).
    public mutating func chunk() -> UnsafeRawBufferPointer {
        let length = Int(truncatingIfNeeded: min(varint(), UInt64(bytes.count - min(index, bytes.count))))
        defer { index += length }
        return UnsafeRawBufferPointer(rebasing: bytes[index..<index + length])
    }

    /// A chunk decoded as one frame; the error when it is malformed (an event of its own: the
    /// peer broke the protocol).
    public mutating func frame() -> Result<Frame, WireFormatError> {
        let body = chunk()
        return Result { () throws(WireFormatError) -> Frame in try Frame(decoding: body) }
    }
}
