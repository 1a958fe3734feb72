/// Why bytes from Redis are not RESP3 the parser accepts: malformed, or beyond its bounds.
struct RESPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    enum Reason: Equatable, Sendable {
        /// A type byte RESP3 does not define (or streamed strings, which Redis never sends).
        case unknownType(UInt8)
        /// A header line that is not a number where one belongs, or a bad boolean, double or null.
        case malformedLine
        /// A line without its CRLF within ``RESPParser/Limits/maxLineLength``.
        case lineTooLong
        /// A bulk, blob error or verbatim string longer than ``RESPParser/Limits/maxBulkLength``.
        case bulkTooLong(Int64)
        /// An aggregate with more elements than ``RESPParser/Limits/maxAggregateCount``.
        case aggregateTooLarge(Int64)
        /// Aggregates nested deeper than ``RESPParser/Limits/maxDepth``.
        case tooDeep
        /// One value larger than ``RESPParser/Limits/maxValueBytes``.
        case valueTooLarge
        /// A string's bytes not followed by CRLF.
        case missingTerminator
    }

    var reason: Reason
    /// Where in the stream (bytes from the parser's start) the bad element begins.
    var offset: Int

    var description: String {
        let what: String =
            switch reason {
            case .unknownType(let byte): "unknown RESP type byte 0x\(String(byte, radix: 16))"
            case .malformedLine: "malformed RESP header line"
            case .lineTooLong: "RESP line without CRLF too long"
            case .bulkTooLong(let length): "RESP string of \(length) bytes exceeds the limit"
            case .aggregateTooLarge(let count): "RESP aggregate of \(count) elements exceeds the limit"
            case .tooDeep: "RESP aggregates nested too deep"
            case .valueTooLarge: "RESP value exceeds the size limit"
            case .missingTerminator: "RESP string not terminated by CRLF"
            }
        return "\(what) at byte \(offset)"
    }
}
