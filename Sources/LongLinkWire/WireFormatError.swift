/// A malformed byte stream: what was wrong, in which field, at which offset.
///
/// The frame decoder throws it; the client and server wrap it in a ``LongLinkError`` with code
/// ``LongLinkError/Code-swift.struct/protocolViolation`` (or ``LongLinkError/Code-swift.struct/frameTooLarge``).
public struct WireFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of malformation.
    public enum Kind: Sendable, Hashable {
        /// The input ended in the middle of a varint.
        case truncatedVarint
        /// A varint longer than 10 bytes (or overflowing 64 bits).
        case overlongVarint
        /// A length-delimited field (or fixed-width value) runs past the end of its enclosing message.
        case truncatedField
        /// A frame's length prefix exceeds the maximum frame size.
        case frameTooLarge(length: UInt64, limit: Int)
        /// A known field arrived with a wire type its schema does not allow.
        case wrongWireType(expected: UInt8, actual: UInt8)
        /// A wire type that protobuf does not define (6, 7) or a group (3, 4), which v1 never uses.
        case invalidWireType(UInt8)
        /// Field number 0, or above the protobuf maximum.
        case invalidFieldNumber(UInt64)
        /// A string field that is not valid UTF-8.
        case invalidUTF8
        /// A map or repeated field holds more elements than the receiver's
        /// ``Frame/DecodingLimits`` allow, or a map more bytes of keys and values
        /// (``Frame/DecodingLimits/maxMapBytes``; `limit` is then that bound).
        case tooManyElements(limit: Int)
    }

    /// The kind of malformation.
    public var kind: Kind
    /// The field path where it was found, for example `Frame.request.metadata`, or `frame` for the prefix.
    public var field: String
    /// The byte offset in the decoded stream (or message) where the bad element starts.
    public var offset: Int

    /// Creates an error.
    public init(_ kind: Kind, field: String, offset: Int) {
        self.kind = kind
        self.field = field
        self.offset = offset
    }

    /// For example `wrongWireType(expected: 2, actual: 0) in Frame.request.method at offset 7`.
    public var description: String {
        "\(kind) in \(field) at offset \(offset)"
    }
}
