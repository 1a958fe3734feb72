/// A NATS-style topic pattern: dot-separated tokens, where `*` stands for exactly one token and
/// `>`, only as the last token, for one or more tokens.
///
/// `quotes.*` matches `quotes.AAPL` but neither `quotes` nor `quotes.AAPL.bid`; `quotes.>` matches
/// both `quotes.AAPL` and `quotes.AAPL.bid`; `*.AAPL.>` matches `quotes.AAPL.bid`. Tokens are
/// compared byte for byte. The client matches patterns itself: the server pushes by principal and
/// knows nothing of them (see the client's `pushes(matching:)`). A ``LongLinkTopic`` whose name
/// is a pattern names a family of topics.
public struct TopicPattern: Sendable, Hashable, CustomStringConvertible {
    /// One token of a pattern.
    enum Token: Sendable, Hashable {
        /// This token, exactly.
        case literal(String)
        /// `*`: any one token.
        case any
        /// `>`: one or more tokens, to the end.
        case rest
    }

    /// The most bytes a pattern may have.
    public static let maxBytes = 1024

    /// The pattern as written.
    public let text: String
    let tokens: [Token]

    /// Parses `text`, throwing ``LongLinkError/Code-swift.struct/invalidArgument`` when it is empty
    /// or longer than ``maxBytes``, has an empty token (`quotes..bid`, `.quotes`, `quotes.`), has
    /// `>` anywhere but as the last token, or mixes a wildcard with other characters in one token
    /// (`quo*`), which would read as a prefix match it is not.
    public init(_ text: String) throws(LongLinkError) {
        func invalid(_ why: String) -> LongLinkError {
            LongLinkError(code: .invalidArgument, message: "topic pattern \"\(text.prefix(64))\": \(why)")
        }
        guard !text.isEmpty else { throw invalid("it is empty") }
        guard text.utf8.count <= Self.maxBytes else { throw invalid("longer than \(Self.maxBytes) bytes") }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        var tokens: [Token] = []
        for (index, part) in parts.enumerated() {
            switch part {
            case "": throw invalid("token \(index + 1) is empty")
            case "*": tokens.append(.any)
            case ">":
                guard index == parts.count - 1 else { throw invalid("'>' must be the last token") }
                tokens.append(.rest)
            default:
                guard !part.contains("*"), !part.contains(">") else {
                    throw invalid("a wildcard must be a whole token, not part of \"\(part)\"")
                }
                tokens.append(.literal(String(part)))
            }
        }
        self.text = text
        self.tokens = tokens
    }

    /// True when the pattern has no wildcard: it matches exactly one topic, ``text``.
    public var isExact: Bool {
        tokens.allSatisfy { if case .literal = $0 { true } else { false } }
    }

    /// True when `topic` matches. `*` never matches an empty token (the one between the dots of
    /// `quotes..bid`).
    public func matches(_ topic: String) -> Bool {
        var rest = topic.utf8[...]
        var consumed = false
        for token in tokens {
            guard !consumed else { return false }
            let end = rest.firstIndex(of: UInt8(ascii: ".")) ?? rest.endIndex
            let segment = rest[rest.startIndex..<end]
            switch token {
            case .rest: return !rest.isEmpty
            case .any: if segment.isEmpty { return false }
            case .literal(let literal): if !segment.elementsEqual(literal.utf8) { return false }
            }
            if end == rest.endIndex {
                consumed = true
            } else {
                rest = rest[rest.index(after: end)...]
            }
        }
        return consumed
    }

    /// The pattern as written.
    public var description: String { text }
}
