/// Appends protobuf (proto3) encodings to a byte array.
///
/// The writer never allocates per field: callers compute the size of every nested message first
/// (the `…Size` functions mirror the `write…` functions), reserve the total once, and then the
/// writer only appends. Proto3 defaults (0, `false`, empty strings, bytes, maps and lists) are not
/// written, except where the caller writes a present sub-message on purpose.
struct ProtobufWriter {
    /// The bytes written so far (including whatever the buffer held before).
    var bytes: [UInt8]

    /// Creates a writer that appends to `bytes`.
    init(bytes: [UInt8] = []) {
        self.bytes = bytes
    }

    /// Runs `body` with a writer that appends to `buffer` without copying it.
    static func append(to buffer: inout [UInt8], reserving extra: Int, _ body: (inout ProtobufWriter) -> Void) {
        var writer = ProtobufWriter()
        swap(&writer.bytes, &buffer)
        writer.reserve(extra)
        body(&writer)
        swap(&writer.bytes, &buffer)
    }

    /// Makes room for `extra` more bytes, growing geometrically so that repeated small appends
    /// into one buffer stay linear.
    mutating func reserve(_ extra: Int) {
        let needed = bytes.count + extra
        if needed > bytes.capacity {
            bytes.reserveCapacity(Swift.max(needed, bytes.capacity * 2))
        }
    }

    // MARK: Sizes

    /// The number of bytes `value` takes as a varint (1 to 10).
    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        let significantBits = 64 - (value | 1).leadingZeroBitCount
        return (significantBits + 6) / 7
    }

    /// The size of a field tag.
    @inline(__always)
    static func tagSize(_ fieldNumber: Int) -> Int {
        varintSize(UInt64(fieldNumber) << 3)
    }

    /// The size of a varint field, or 0 when `value` is the default.
    @inline(__always)
    static func varintFieldSize(_ fieldNumber: Int, _ value: UInt64) -> Int {
        value == 0 ? 0 : tagSize(fieldNumber) + varintSize(value)
    }

    /// The size of a length-delimited field whose content takes `length` bytes, written even when empty.
    @inline(__always)
    static func delimitedFieldSize(_ fieldNumber: Int, length: Int) -> Int {
        tagSize(fieldNumber) + varintSize(UInt64(length)) + length
    }

    /// The size of a string field, or 0 when it is empty.
    @inline(__always)
    static func stringFieldSize(_ fieldNumber: Int, _ value: String) -> Int {
        let length = value.utf8.count
        return length == 0 ? 0 : delimitedFieldSize(fieldNumber, length: length)
    }

    /// The size of a bytes field, or 0 when it is empty.
    @inline(__always)
    static func bytesFieldSize(_ fieldNumber: Int, _ value: [UInt8]) -> Int {
        value.isEmpty ? 0 : delimitedFieldSize(fieldNumber, length: value.count)
    }

    /// The size of one `map<string, string>` entry's content (key field 1, value field 2).
    @inline(__always)
    static func mapEntrySize(key: String, value: String) -> Int {
        stringFieldSize(1, key) + stringFieldSize(2, value)
    }

    /// The size of a `map<string, string>` field: one length-delimited entry per pair.
    static func stringMapFieldSize(_ fieldNumber: Int, _ map: [String: String]) -> Int {
        guard !map.isEmpty else { return 0 }
        var total = 0
        for (key, value) in map {
            total += delimitedFieldSize(fieldNumber, length: mapEntrySize(key: key, value: value))
        }
        return total
    }

    /// The size of the content of a packed `repeated uint64` field.
    static func packedContentSize(_ values: [UInt64]) -> Int {
        var total = 0
        for value in values {
            total += varintSize(value)
        }
        return total
    }

    /// The size of a packed `repeated uint64` field, or 0 when the list is empty.
    static func packedUInt64FieldSize(_ fieldNumber: Int, _ values: [UInt64]) -> Int {
        values.isEmpty ? 0 : delimitedFieldSize(fieldNumber, length: packedContentSize(values))
    }

    // MARK: Writing

    /// Appends `value` as a base-128 varint, least significant group first.
    @inline(__always)
    mutating func writeVarint(_ value: UInt64) {
        var remaining = value
        while remaining >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: remaining) | 0x80)
            remaining &>>= 7
        }
        bytes.append(UInt8(truncatingIfNeeded: remaining))
    }

    /// Appends a field tag.
    @inline(__always)
    mutating func writeTag(_ fieldNumber: Int, _ wireType: WireType) {
        writeVarint(UInt64(fieldNumber) << 3 | UInt64(wireType.rawValue))
    }

    /// Appends a varint field unless `value` is 0.
    @inline(__always)
    mutating func writeVarintField(_ fieldNumber: Int, _ value: UInt64) {
        guard value != 0 else { return }
        writeTag(fieldNumber, .varint)
        writeVarint(value)
    }

    /// Appends a `uint32` field unless `value` is 0.
    @inline(__always)
    mutating func writeUInt32Field(_ fieldNumber: Int, _ value: UInt32) {
        writeVarintField(fieldNumber, UInt64(value))
    }

    /// Appends a `bool` field unless `value` is false.
    @inline(__always)
    mutating func writeBoolField(_ fieldNumber: Int, _ value: Bool) {
        writeVarintField(fieldNumber, value ? 1 : 0)
    }

    /// Appends the tag and length of a length-delimited field; the caller appends `length` bytes next.
    @inline(__always)
    mutating func writeDelimitedHeader(_ fieldNumber: Int, length: Int) {
        writeTag(fieldNumber, .lengthDelimited)
        writeVarint(UInt64(length))
    }

    /// Appends a string field (its UTF-8 bytes) unless it is empty.
    @inline(__always)
    mutating func writeStringField(_ fieldNumber: Int, _ value: String) {
        let length = value.utf8.count
        guard length != 0 else { return }
        writeDelimitedHeader(fieldNumber, length: length)
        bytes.append(contentsOf: value.utf8)
    }

    /// Appends a bytes field unless it is empty.
    @inline(__always)
    mutating func writeBytesField(_ fieldNumber: Int, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        writeDelimitedHeader(fieldNumber, length: value.count)
        bytes.append(contentsOf: value)
    }

    /// Appends a `map<string, string>` field, one entry per pair, keys in UTF-8 byte order so that
    /// equal maps always encode to equal bytes. Empty keys and values are left out of their entry.
    mutating func writeStringMapField(_ fieldNumber: Int, _ map: [String: String]) {
        switch map.count {
        case 0:
            return
        case 1:
            let entry = map.first!
            writeMapEntry(fieldNumber, key: entry.key, value: entry.value)
        default:
            let sorted = map.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for entry in sorted {
                writeMapEntry(fieldNumber, key: entry.key, value: entry.value)
            }
        }
    }

    @inline(__always)
    private mutating func writeMapEntry(_ fieldNumber: Int, key: String, value: String) {
        writeDelimitedHeader(fieldNumber, length: Self.mapEntrySize(key: key, value: value))
        writeStringField(1, key)
        writeStringField(2, value)
    }

    /// Appends a packed `repeated uint64` field unless the list is empty.
    mutating func writePackedUInt64Field(_ fieldNumber: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        writeDelimitedHeader(fieldNumber, length: Self.packedContentSize(values))
        for value in values {
            writeVarint(value)
        }
    }
}
