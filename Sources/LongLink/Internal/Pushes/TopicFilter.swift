/// Which pushes one consumer wants: every push, one topic, or the topics a pattern matches.
enum TopicFilter: Sendable, Hashable {
    case all
    case exact(String)
    case pattern(TopicPattern)

    /// A consumer of `topic`, or of every topic when nil (the public API's spelling).
    init(_ topic: String?) {
        self = topic.map { .exact($0) } ?? .all
    }

    /// A pattern without wildcards is the exact topic it names, and takes the fast path.
    init(_ pattern: TopicPattern) {
        self = pattern.isExact ? .exact(pattern.text) : .pattern(pattern)
    }

    func takes(_ push: Push) -> Bool {
        switch self {
        case .all: true
        case .exact(let topic): topic == push.topic
        case .pattern(let pattern): pattern.matches(push.topic)
        }
    }

    /// The topic of an exact filter: its consumers are found by a dictionary lookup.
    var exactTopic: String? {
        if case .exact(let topic) = self { topic } else { nil }
    }
}
