/// Reads protobuf fields from a bounded region of memory, never past its end.
///
/// A reader covers `bytes[index..<endIndex]`; a nested message gets a reader over its own region,
/// so a length that runs past its parent is caught before anything is read from it. Every length
/// taken from the input is checked against the bytes actually present before it is used, and
/// every error names the field path and the absolute offset (``streamOffset`` plus the index) of
/// the element that was bad.
struct ProtobufReader {
    /// The whole buffer this reader (and its parent readers) read from.
    private let bytes: UnsafeRawBufferPointer
    /// The index of the next byte to read.
    private(set) var index: Int
    /// One past the last byte of this reader's region.
    let endIndex: Int
    /// The absolute stream offset of `bytes[0]`, added to indexes in errors.
    let streamOffset: Int
    /// Bounds on repeated fields, handed down to the readers of nested messages.
    let limits: Frame.DecodingLimits

    /// Creates a reader over all of `bytes`, whose first byte is at `streamOffset` in the stream.
    init(_ bytes: UnsafeRawBufferPointer, streamOffset: Int = 0, limits: Frame.DecodingLimits = .unlimited) {
        self.init(bytes: bytes, index: 0, endIndex: bytes.count, streamOffset: streamOffset, limits: limits)
    }

    private init(
        bytes: UnsafeRawBufferPointer, index: Int, endIndex: Int, streamOffset: Int, limits: Frame.DecodingLimits
    ) {
        self.bytes = bytes
        self.index = index
        self.endIndex = endIndex
        self.streamOffset = streamOffset
        self.limits = limits
    }

    /// True when every byte of the region has been read.
    var isAtEnd: Bool { index >= endIndex }

    /// The absolute offset of the next byte.
    var offset: Int { streamOffset + index }

    // MARK: Varints

    /// The outcome of scanning a varint without consuming it.
    enum VarintScan: Equatable {
        /// A complete varint of `size` bytes.
        case complete(UInt64, size: Int)
        /// The region ends before the varint does.
        case truncated
        /// More than 10 bytes, or a 10th byte that overflows 64 bits.
        case overlong
    }

    /// Scans the varint at `bytes[start...]` without reading past `end`.
    @inline(__always)
    static func scanVarint(_ bytes: UnsafeRawBufferPointer, at start: Int, end: Int) -> VarintScan {
        // Fast path: one byte (tags, small lengths and most values).
        guard start < end else { return .truncated }
        let first = bytes[start]
        if first < 0x80 {
            return .complete(UInt64(first), size: 1)
        }
        var value = UInt64(first & 0x7F)
        var shift: UInt64 = 7
        var position = start + 1
        while position < end {
            let byte = bytes[position]
            position += 1
            if shift == 63 {
                // The 10th byte may only contribute bit 63, and must end the varint.
                guard byte <= 1 else { return .overlong }
                return .complete(value | UInt64(byte) << 63, size: 10)
            }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                return .complete(value, size: position - start)
            }
            shift += 7
        }
        return .truncated
    }

    /// Reads a varint, or throws ``WireFormatError/Kind/truncatedVarint`` or
    /// ``WireFormatError/Kind/overlongVarint`` at its first byte.
    @inline(__always)
    mutating func readVarint(field: String) throws(WireFormatError) -> UInt64 {
        switch Self.scanVarint(bytes, at: index, end: endIndex) {
        case .complete(let value, let size):
            index += size
            return value
        case .truncated:
            throw WireFormatError(.truncatedVarint, field: field, offset: offset)
        case .overlong:
            throw WireFormatError(.overlongVarint, field: field, offset: offset)
        }
    }

    // MARK: Tags and fields

    /// Reads the next field tag, or returns nil at the end of the region.
    ///
    /// Throws ``WireFormatError/Kind/invalidFieldNumber(_:)`` for field 0 (or a number above
    /// 2^29 - 1) and ``WireFormatError/Kind/invalidWireType(_:)`` for groups and types 6 and 7.
    @inline(__always)
    mutating func readTag(in message: String) throws(WireFormatError) -> FieldTag? {
        guard index < endIndex else { return nil }
        let tagOffset = offset
        let key = try readVarint(field: message)
        let fieldNumber = key >> 3
        guard fieldNumber != 0, fieldNumber <= FieldTag.maximumFieldNumber else {
            throw WireFormatError(.invalidFieldNumber(fieldNumber), field: message, offset: tagOffset)
        }
        let rawType = UInt8(truncatingIfNeeded: key & 7)
        guard let wireType = WireType(rawValue: rawType), wireType != .startGroup, wireType != .endGroup else {
            throw WireFormatError(.invalidWireType(rawType), field: message, offset: tagOffset)
        }
        return FieldTag(fieldNumber: Int(fieldNumber), wireType: wireType, offset: tagOffset)
    }

    /// Throws ``WireFormatError/Kind/wrongWireType(expected:actual:)`` unless `tag` has `expected`.
    @inline(__always)
    func expect(_ tag: FieldTag, _ expected: WireType, field: String) throws(WireFormatError) {
        guard tag.wireType == expected else {
            throw WireFormatError(
                .wrongWireType(expected: expected.rawValue, actual: tag.wireType.rawValue), field: field,
                offset: tag.offset)
        }
    }

    /// Reads the value of a varint field.
    @inline(__always)
    mutating func readVarintField(_ tag: FieldTag, field: String) throws(WireFormatError) -> UInt64 {
        try expect(tag, .varint, field: field)
        return try readVarint(field: field)
    }

    /// Reads the value of a `uint32` field (a larger varint keeps its low 32 bits, as protobuf does).
    @inline(__always)
    mutating func readUInt32Field(_ tag: FieldTag, field: String) throws(WireFormatError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readVarintField(tag, field: field))
    }

    /// Reads the value of a `bool` field (any non-zero varint is true).
    @inline(__always)
    mutating func readBoolField(_ tag: FieldTag, field: String) throws(WireFormatError) -> Bool {
        try readVarintField(tag, field: field) != 0
    }

    /// Reads the length of a length-delimited field and returns the range of its content, which
    /// must lie inside this reader's region; the reader moves past the content.
    @inline(__always)
    mutating func readDelimitedRange(_ tag: FieldTag, field: String) throws(WireFormatError)
        -> Range<Int>
    {
        try expect(tag, .lengthDelimited, field: field)
        let length = try readVarint(field: field)
        guard length <= UInt64(endIndex - index) else {
            throw WireFormatError(.truncatedField, field: field, offset: tag.offset)
        }
        let start = index
        index += Int(length)
        return start..<index
    }

    /// Reads a length-delimited field and returns a reader over its content (a nested message).
    @inline(__always)
    mutating func readMessageField(_ tag: FieldTag, field: String) throws(WireFormatError)
        -> ProtobufReader
    {
        let range = try readDelimitedRange(tag, field: field)
        return ProtobufReader(
            bytes: bytes, index: range.lowerBound, endIndex: range.upperBound, streamOffset: streamOffset,
            limits: limits)
    }

    /// Reads a string field, which must be valid UTF-8.
    @inline(__always)
    mutating func readStringField(_ tag: FieldTag, field: String) throws(WireFormatError) -> String {
        let range = try readDelimitedRange(tag, field: field)
        if range.isEmpty {
            return ""
        }
        let content = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard let string = Self.validatedString(content) else {
            throw WireFormatError(.invalidUTF8, field: field, offset: tag.offset)
        }
        return string
    }

    /// The string `utf8` spells, or nil when it is not valid UTF-8.
    ///
    /// `String(decoding:as:)` validates once (with the standard library's specialised UTF-8 fast
    /// path) and replaces every invalid sequence with U+FFFD, so its result has exactly the input's
    /// bytes if and only if the input was valid. (`String(validating:as:)` would say so directly,
    /// but it goes through unspecialised generic code that costs more than the comparison.)
    @inline(__always)
    static func validatedString(_ utf8: UnsafeRawBufferPointer) -> String? {
        var string = utf8.withMemoryRebound(to: UInt8.self) { String(decoding: $0, as: UTF8.self) }
        let unchanged = string.withUTF8 { decoded in
            decoded.count == utf8.count && bytesEqual(UnsafeRawBufferPointer(decoded), utf8)
        }
        return unchanged ? string : nil
    }

    /// Compares two byte regions of equal length, eight bytes at a time.
    @inline(__always)
    private static func bytesEqual(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Bool {
        let count = left.count
        var index = 0
        while index + 8 <= count {
            guard
                left.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    == right.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            else { return false }
            index += 8
        }
        while index < count {
            guard left[index] == right[index] else { return false }
            index += 1
        }
        return true
    }

    /// Reads a bytes field into a new array.
    @inline(__always)
    mutating func readBytesField(_ tag: FieldTag, field: String) throws(WireFormatError) -> [UInt8] {
        let range = try readDelimitedRange(tag, field: field)
        return range.isEmpty ? [] : [UInt8](UnsafeRawBufferPointer(rebasing: bytes[range]))
    }

    /// Reads one `repeated uint64` field occurrence, packed (wire type 2) or not (wire type 0),
    /// appending to `values`.
    mutating func readRepeatedUInt64Field(_ tag: FieldTag, into values: inout [UInt64], field: String)
        throws(WireFormatError)
    {
        switch tag.wireType {
        case .varint:
            guard values.count < limits.maxRepeatedValues else {
                throw WireFormatError(
                    .tooManyElements(limit: limits.maxRepeatedValues), field: field, offset: tag.offset)
            }
            values.append(try readVarint(field: field))
        case .lengthDelimited:
            var packed = try readMessageField(tag, field: field)
            // Every varint ends with exactly one byte below 0x80: count them to reserve once. The
            // count is bounded by bytes that are present, so this never trusts a length.
            var count = 0
            for position in packed.index..<packed.endIndex where packed.bytes[position] < 0x80 {
                count += 1
            }
            // Checked before any value is decoded or stored.
            guard count <= limits.maxRepeatedValues - values.count else {
                throw WireFormatError(
                    .tooManyElements(limit: limits.maxRepeatedValues), field: field, offset: tag.offset)
            }
            values.reserveCapacity(values.count + count)
            while !packed.isAtEnd {
                values.append(try packed.readVarint(field: field))
            }
        default:
            try expect(tag, .lengthDelimited, field: field)
        }
    }

    /// Skips the value of a field this reader's caller does not know.
    @inline(__always)
    mutating func skipField(_ tag: FieldTag, in message: String) throws(WireFormatError) {
        switch tag.wireType {
        case .varint:
            _ = try readVarint(field: message)
        case .fixed64:
            try skipFixed(8, tag, in: message)
        case .fixed32:
            try skipFixed(4, tag, in: message)
        case .lengthDelimited:
            _ = try readDelimitedRange(tag, field: message)
        case .startGroup, .endGroup:
            // readTag rejects groups; kept for exhaustiveness.
            throw WireFormatError(.invalidWireType(tag.wireType.rawValue), field: message, offset: tag.offset)
        }
    }

    @inline(__always)
    private mutating func skipFixed(_ size: Int, _ tag: FieldTag, in message: String)
        throws(WireFormatError)
    {
        guard endIndex - index >= size else {
            throw WireFormatError(.truncatedField, field: message, offset: tag.offset)
        }
        index += size
    }
}
