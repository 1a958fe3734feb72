/// Which best-effort pushes stand for one another when a consumer is behind: pushes with the same
/// key do, and only the latest one waits in the consumer's buffer.
///
/// A consumer that keeps up never conflates anything: the pushes that arrive together (one read)
/// while its task waits all go to it, and it is woken once for them. One that is behind holds at
/// most one untaken best-effort push per key, in the place where that key's first untaken push
/// arrived, always the newest. A quote screen keyed by symbol therefore reads the
/// freshest price of every symbol, and memory stays bounded by the number of keys (and by
/// ``ClientConfiguration/pushBufferLimit``). Reliable pushes are never conflated nor dropped.
///
/// ```swift
/// configuration.pushConflation = .byKey { push in push.topic }            // the default
/// let quotes = client.pushes(topic: "quotes", conflation: .byKey { push in
///     String(decoding: push.payload.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)   // by symbol
/// })
/// ```
public struct PushConflation: Sendable {
    /// The key of a best-effort push; nil: the push is never conflated.
    let key: (@Sendable (Push) -> String?)?

    private init(key: (@Sendable (Push) -> String?)?) {
        self.key = key
    }

    /// Conflates best-effort pushes of the same topic (the default).
    public static let byTopic = PushConflation(key: { $0.topic })

    /// No conflation: every best-effort push is kept while the consumer's buffer has room, and
    /// dropped (newest first) once it is full.
    public static let disabled = PushConflation(key: nil)

    /// Conflates best-effort pushes for which `key` returns the same string; a push for which it
    /// returns nil is never conflated. Called on the client's event loop for each best-effort push
    /// a lagging or waiting consumer is offered: it must be quick and must not block.
    public static func byKey(_ key: @escaping @Sendable (Push) -> String?) -> PushConflation {
        PushConflation(key: key)
    }
}
