/// How a ``LongLinkTopic``'s pushes travel.
public struct TopicKind: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: Sendable, Hashable {
        case reliable
        case bestEffort
    }

    private let kind: Kind

    /// Stored by the server until the client acknowledges it, each delivered once per seq, across
    /// reconnections (`server.push(to:topic:payload:)`).
    public static let reliable = TopicKind(kind: .reliable)

    /// Sent to the connections open now, dropped where one is not writable, never stored
    /// (`server.pushBestEffort(to:topic:payload:)`): quotes, typing indicators, anything the next
    /// one replaces.
    public static let bestEffort = TopicKind(kind: .bestEffort)

    /// True for ``reliable``.
    public var isReliable: Bool { kind == .reliable }

    /// `reliable` or `best effort`.
    public var description: String { isReliable ? "reliable" : "best effort" }
}
