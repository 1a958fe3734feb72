/// An error reply from Redis: the cause (``LongLinkError/underlying``) of the ``LongLinkError`` a
/// Redis-backed store throws when Redis refused a command.
///
/// Redis starts every error with an upper-case word naming its kind (`ERR`, `WRONGTYPE`,
/// `NOSCRIPT`, `OOM`, `LOADING`, `BUSY`, `READONLY`, `NOAUTH`, …), followed by the text.
public struct RedisServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The first word of the reply, for example `WRONGTYPE`; empty when the reply had none.
    public var prefix: String
    /// The rest of the reply.
    public var message: String

    /// Creates the error for `prefix` and `message`.
    public init(prefix: String, message: String) {
        self.prefix = prefix
        self.message = message
    }

    /// Splits a reply such as `ERR unknown command` at its first space; a reply whose first word
    /// is not upper case has no prefix.
    public init(reply: String) {
        let parts = reply.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        if let first = parts.first, !first.isEmpty, first.allSatisfy({ $0.isUppercase || $0 == "_" }) {
            self.init(prefix: String(first), message: parts.count > 1 ? String(parts[1]) : "")
        } else {
            self.init(prefix: "", message: reply)
        }
    }

    /// `PREFIX message`.
    public var description: String { prefix.isEmpty ? message : "\(prefix) \(message)" }
}
