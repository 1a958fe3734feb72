import LongLinkWire

/// Writes the scripts ``FuzzInput`` reads, for the seed corpora: the same encodings, the other way.
public struct FuzzScript {
    public private(set) var bytes: [UInt8] = []

    public init() {}

    public mutating func byte(_ value: UInt8) { bytes.append(value) }

    public mutating func bool(_ value: Bool) { bytes.append(value ? 1 : 0) }

    public mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    public mutating func chunk(_ chunk: [UInt8]) {
        varint(UInt64(chunk.count))
        bytes.append(contentsOf: chunk)
    }

    public mutating func frame(_ frame: Frame) {
        var body: [UInt8] = []
        frame.encode(into: &body)
        chunk(body)
    }
}
