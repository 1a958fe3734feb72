// A message shaped as SwiftProtobuf's generated code is (protoc-gen-swift for `quotes.Tick`), over
// a stand-in of the few SwiftProtobuf declarations such code uses, with its own minimal protobuf
// encoding. LongLink does not depend on SwiftProtobuf; this is how the tests show that a generated
// type conforms with the bridge the docs give, character for character.
import LongLink

/// The stand-in for the SwiftProtobuf module: the same names and generic shapes as its API.
enum SwiftProtobuf {
    /// `SwiftProtobufContiguousBytes`: the byte containers `serializedBytes` works with.
    protocol SwiftProtobufContiguousBytes {
        init(_ bytes: [UInt8])
        var bytes: [UInt8] { get }
    }

    /// `SwiftProtobuf.Message`: generated types implement decoding and traversal; the protocol's
    /// extension gives `init(serializedBytes:)` and `serializedBytes()`.
    protocol Message: Sendable {
        init()
        mutating func decodeMessage(decoder: inout BinaryDecoder) throws
        func traverse(visitor: inout BinaryEncodingVisitor) throws
    }

    struct BinaryDecodingError: Error {}

    /// `ExtensionMap`, `BinaryDecodingOptions`, `BinaryEncodingOptions`: the types of the extra
    /// parameters (with defaults) of `init(serializedBytes:)` and `serializedBytes()`.
    struct ExtensionMap {}
    struct BinaryDecodingOptions { init() {} }
    struct BinaryEncodingOptions { init() {} }

    /// Reads fields of the protobuf binary format (varint and length-delimited wire types).
    struct BinaryDecoder {
        private let bytes: [UInt8]
        private var offset = 0
        private var wireType: UInt64 = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func nextFieldNumber() throws -> Int? {
            guard offset < bytes.count else { return nil }
            let key = try varint()
            wireType = key & 7
            return Int(key >> 3)
        }

        mutating func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard offset < bytes.count, shift < 64 else { throw BinaryDecodingError() }
                let byte = bytes[offset]
                offset += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }

        mutating func delimited() throws -> ArraySlice<UInt8> {
            let length = Int(try varint())
            guard length <= bytes.count - offset else { throw BinaryDecodingError() }
            defer { offset += length }
            return bytes[offset..<offset + length]
        }

        mutating func decodeSingularStringField(value: inout String) throws {
            value = String(decoding: try delimited(), as: UTF8.self)
        }

        mutating func decodeSingularInt64Field(value: inout Int64) throws {
            value = Int64(bitPattern: try varint())
        }

        mutating func decodeSingularUInt64Field(value: inout UInt64) throws {
            value = try varint()
        }

        mutating func decodeRepeatedUInt32Field(value: inout [UInt32]) throws {
            guard wireType == 2 else { return value.append(UInt32(truncatingIfNeeded: try varint())) }
            var packed = BinaryDecoder(Array(try delimited()))
            while packed.offset < packed.bytes.count { value.append(UInt32(truncatingIfNeeded: try packed.varint())) }
        }

        mutating func skipField() throws {
            switch wireType {
            case 0: _ = try varint()
            case 2: _ = try delimited()
            default: throw BinaryDecodingError()
            }
        }
    }

    /// Writes fields in the protobuf binary format.
    struct BinaryEncodingVisitor {
        var bytes: [UInt8] = []

        mutating func varint(_ value: UInt64) {
            var rest = value
            while rest >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            bytes.append(UInt8(rest))
        }

        mutating func visitSingularStringField(value: String, fieldNumber: Int) throws {
            varint(UInt64(fieldNumber << 3 | 2))
            varint(UInt64(value.utf8.count))
            bytes.append(contentsOf: value.utf8)
        }

        mutating func visitSingularInt64Field(value: Int64, fieldNumber: Int) throws {
            varint(UInt64(fieldNumber << 3))
            varint(UInt64(bitPattern: value))
        }

        mutating func visitSingularUInt64Field(value: UInt64, fieldNumber: Int) throws {
            varint(UInt64(fieldNumber << 3))
            varint(value)
        }

        mutating func visitPackedUInt32Field(value: [UInt32], fieldNumber: Int) throws {
            var packed = BinaryEncodingVisitor()
            for element in value { packed.varint(UInt64(element)) }
            varint(UInt64(fieldNumber << 3 | 2))
            varint(UInt64(packed.bytes.count))
            bytes.append(contentsOf: packed.bytes)
        }
    }
}

extension [UInt8]: SwiftProtobuf.SwiftProtobufContiguousBytes {
    var bytes: [UInt8] { self }
}

extension SwiftProtobuf.Message {
    init<Bytes: SwiftProtobuf.SwiftProtobufContiguousBytes>(
        serializedBytes bytes: Bytes, extensions: SwiftProtobuf.ExtensionMap? = nil, partial: Bool = false,
        options: SwiftProtobuf.BinaryDecodingOptions = SwiftProtobuf.BinaryDecodingOptions()
    ) throws {
        self.init()
        var decoder = SwiftProtobuf.BinaryDecoder(bytes.bytes)
        try decodeMessage(decoder: &decoder)
    }

    func serializedBytes<Bytes: SwiftProtobuf.SwiftProtobufContiguousBytes>(
        partial: Bool = false, options: SwiftProtobuf.BinaryEncodingOptions = SwiftProtobuf.BinaryEncodingOptions()
    ) throws -> Bytes {
        var visitor = SwiftProtobuf.BinaryEncodingVisitor()
        try traverse(visitor: &visitor)
        return Bytes(visitor.bytes)
    }
}

// MARK: What protoc-gen-swift writes for `message Tick { string symbol = 1; int64 price_e4 = 2;
// uint64 volume = 3; repeated uint32 flags = 4; }` in package `quotes`

struct Quotes_Tick: Sendable {
    var symbol: String = String()
    var priceE4: Int64 = 0
    var volume: UInt64 = 0
    var flags: [UInt32] = []

    init() {}
}

extension Quotes_Tick: SwiftProtobuf.Message {
    static let protoMessageName: String = "quotes.Tick"

    mutating func decodeMessage(decoder: inout SwiftProtobuf.BinaryDecoder) throws {
        while let fieldNumber = try decoder.nextFieldNumber() {
            switch fieldNumber {
            case 1: try decoder.decodeSingularStringField(value: &self.symbol)
            case 2: try decoder.decodeSingularInt64Field(value: &self.priceE4)
            case 3: try decoder.decodeSingularUInt64Field(value: &self.volume)
            case 4: try decoder.decodeRepeatedUInt32Field(value: &self.flags)
            default: try decoder.skipField()
            }
        }
    }

    func traverse(visitor: inout SwiftProtobuf.BinaryEncodingVisitor) throws {
        if !self.symbol.isEmpty { try visitor.visitSingularStringField(value: self.symbol, fieldNumber: 1) }
        if self.priceE4 != 0 { try visitor.visitSingularInt64Field(value: self.priceE4, fieldNumber: 2) }
        if self.volume != 0 { try visitor.visitSingularUInt64Field(value: self.volume, fieldNumber: 3) }
        if !self.flags.isEmpty { try visitor.visitPackedUInt32Field(value: self.flags, fieldNumber: 4) }
    }
}

// MARK: The app's side, exactly as the docs give it

extension LongLinkBinaryMessage where Self: SwiftProtobuf.Message {
    init(serializedBytes bytes: [UInt8]) throws { try self.init(serializedBytes: bytes, extensions: nil) }
    func serializedBytes() throws -> [UInt8] { try serializedBytes(partial: false) }
}

extension Quotes_Tick: LongLinkBinaryMessage {}
