/// Consumers by what they want, so that offering a push costs a dictionary lookup: the consumers
/// of one exact topic are found by that topic, and only those of every topic or of a pattern are
/// scanned (none, unless the app asked for them).
struct TopicIndex<Value> {
    /// Every consumer, by id.
    private(set) var byID: [UInt64: (filter: TopicFilter, value: Value)] = [:]
    private var exact: [String: [UInt64: Value]] = [:]
    /// The consumers of every topic and of patterns.
    private var wildcards: [UInt64: (filter: TopicFilter, value: Value)] = [:]

    var isEmpty: Bool { byID.isEmpty }

    mutating func insert(_ value: Value, id: UInt64, filter: TopicFilter) {
        remove(id)
        byID[id] = (filter, value)
        if let topic = filter.exactTopic {
            exact[topic, default: [:]][id] = value
        } else {
            wildcards[id] = (filter, value)
        }
    }

    @discardableResult
    mutating func remove(_ id: UInt64) -> Value? {
        guard let (filter, value) = byID.removeValue(forKey: id) else { return nil }
        if let topic = filter.exactTopic {
            exact[topic]?[id] = nil
            if exact[topic]?.isEmpty == true { exact[topic] = nil }
        } else {
            wildcards[id] = nil
        }
        return value
    }

    mutating func removeAll() {
        byID.removeAll()
        exact.removeAll()
        wildcards.removeAll()
    }

    /// True when some consumer takes `push`.
    func contains(taking push: Push) -> Bool {
        exact[push.topic] != nil || wildcards.values.contains { $0.filter.takes(push) }
    }

    /// The consumers that take one push, found with one lookup of its topic.
    struct Matches {
        /// The consumers of its exact topic.
        fileprivate let exact: [UInt64: Value]?
        /// The consumers of every topic and of patterns that take it (empty without any).
        fileprivate let wildcards: [Value]

        var isEmpty: Bool { exact == nil && wildcards.isEmpty }

        func forEach(_ body: (Value) -> Void) {
            if let exact {
                for value in exact.values { body(value) }
            }
            for value in wildcards { body(value) }
        }
    }

    /// The consumers that take `push`.
    func matches(for push: Push) -> Matches {
        let wildcards = self.wildcards.isEmpty ? [] : self.wildcards.values.filter { $0.filter.takes(push) }.map(\.value)
        return Matches(exact: exact[push.topic], wildcards: wildcards)
    }
}
