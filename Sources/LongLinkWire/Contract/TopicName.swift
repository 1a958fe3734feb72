/// One topic of a ``LongLinkTopic``: its name, and whether it belongs to the topic's family. Made
/// by ``LongLinkTopic/topic(_:)`` (`Quotes.topic("AAPL")` is `quotes.AAPL` when `Quotes.name` is
/// `quotes.*`).
public struct TopicName<Topic: LongLinkTopic>: Sendable, Hashable, CustomStringConvertible {
    /// The topic's name, as pushes carry it.
    public let text: String
    /// Why the name is not a member of `Topic`'s family; nil when it is (the server refuses to
    /// publish to such a name).
    package let problem: String?

    /// The member of `Topic`'s family the tokens name.
    init(tokens: [String]) {
        guard let pattern = Topic.pattern else {
            self.text = Topic.name
            self.problem = tokens.isEmpty ? nil : "\(Topic.name) is one topic: it takes no tokens"
            return
        }
        var parts: [String] = []
        var rest = tokens[...]
        var problem: String?
        for token in pattern.tokens {
            switch token {
            case .literal(let literal):
                parts.append(literal)
            case .any:
                guard let next = rest.popFirst() else {
                    problem = problem ?? "\(pattern) takes more tokens than the \(tokens.count) given"
                    continue
                }
                parts.append(next)
            case .rest:
                guard !rest.isEmpty else {
                    problem = problem ?? "\(pattern) takes more tokens than the \(tokens.count) given"
                    continue
                }
                parts.append(rest.joined(separator: "."))
                rest = []
            }
        }
        if problem == nil, !rest.isEmpty {
            problem = "\(pattern) takes fewer tokens than the \(tokens.count) given"
        }
        let text = parts.joined(separator: ".")
        if problem == nil {
            // A token with a dot or a wildcard would name another topic, or a pattern.
            let exact = (try? TopicPattern(text))?.isExact ?? false
            if !exact || !pattern.matches(text) {
                problem = "\(text) is not a topic of \(pattern)"
            }
        }
        self.text = text
        self.problem = problem
    }

    /// The topic's name.
    public var description: String { text }
}
