/// The protobuf wire types: how a field's value is laid out after its tag.
///
/// LongLink v1 uses varints (0) and length-delimited values (2); fixed-width values (1, 5) may
/// appear in unknown fields and are skipped. Groups (3, 4) and the undefined types 6 and 7 are
/// malformed.
enum WireType: UInt8, Sendable {
    /// A base-128 varint: integers, enums and bools.
    case varint = 0
    /// Eight little-endian bytes.
    case fixed64 = 1
    /// A varint length followed by that many bytes: strings, bytes, messages, packed repeated fields.
    case lengthDelimited = 2
    /// The start of a group (deprecated; never valid in v1).
    case startGroup = 3
    /// The end of a group (deprecated; never valid in v1).
    case endGroup = 4
    /// Four little-endian bytes.
    case fixed32 = 5
}

/// A field key: the field number and the wire type, encoded on the wire as `number << 3 | type`.
struct FieldTag: Sendable {
    /// The largest field number protobuf allows (2^29 - 1).
    static let maximumFieldNumber: UInt64 = (1 << 29) - 1

    /// The field number, 1 through ``maximumFieldNumber``.
    var fieldNumber: Int
    /// The wire type (never a group or an undefined type once read).
    var wireType: WireType
    /// The offset of the tag's first byte in the stream (for errors).
    var offset: Int
}
