/// One RESP3 reply or push, as the parser builds it.
///
/// Strings stay bytes: Redis values are binary (a payload, a seq), and only the caller knows which
/// ones are text.
indirect enum RESPValue: Equatable, Sendable {
    /// `+OK`: a short status line.
    case simpleString([UInt8])
    /// `-ERR message`: an error in one line.
    case simpleError([UInt8])
    /// `:42`.
    case integer(Int64)
    /// `$3\r\nabc`: a binary-safe string.
    case bulkString([UInt8])
    /// `_`, and RESP2's `$-1` and `*-1`.
    case null
    /// `,3.14`, also `inf`, `-inf` and `nan`.
    case double(Double)
    /// `#t` or `#f`.
    case boolean(Bool)
    /// `!21\r\nSYNTAX invalid syntax`: a binary-safe error.
    case blobError([UInt8])
    /// `=15\r\ntxt:Some string`: a string with a three-byte format.
    case verbatimString(format: [UInt8], text: [UInt8])
    /// `(3492890328409238509324850943850943825024385`: its digits (and sign) as sent.
    case bigNumber([UInt8])
    /// `*N`.
    case array([RESPValue])
    /// `%N`: key-value pairs in the order sent.
    case map([Pair])
    /// `~N`.
    case set([RESPValue])
    /// `|N` attributes ahead of the value they describe.
    case attributed(attributes: [Pair], value: RESPValue)
    /// `>N`: out-of-band data (pub/sub messages, invalidations).
    case push([RESPValue])

    /// One entry of a map or of attributes.
    struct Pair: Equatable, Sendable {
        var key: RESPValue
        var value: RESPValue
    }

    /// The value without its attributes.
    var unattributed: RESPValue {
        if case .attributed(_, let value) = self { return value.unattributed }
        return self
    }

    /// The bytes of a simple, bulk or verbatim string.
    var bytes: [UInt8]? {
        switch unattributed {
        case .simpleString(let bytes), .bulkString(let bytes): bytes
        case .verbatimString(_, let text): text
        default: nil
        }
    }

    /// The bytes as UTF-8 text.
    var string: String? { bytes.map { String(decoding: $0, as: UTF8.self) } }

    /// An integer, or a string holding one (Lua scripts and `HGET` answer with either).
    var int64: Int64? {
        switch unattributed {
        case .integer(let value): value
        case .simpleString(let bytes), .bulkString(let bytes): Int64(String(decoding: bytes, as: UTF8.self))
        default: nil
        }
    }

    /// The elements of an array, set or push.
    var elements: [RESPValue]? {
        switch unattributed {
        case .array(let values), .set(let values), .push(let values): values
        default: nil
        }
    }

    /// The text of an error reply, simple or blob.
    var errorText: [UInt8]? {
        switch unattributed {
        case .simpleError(let bytes), .blobError(let bytes): bytes
        default: nil
        }
    }
}
