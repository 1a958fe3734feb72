/// A typed topic: its name (or the pattern of a family of topics), the type of its messages, and
/// whether its pushes are reliable or best effort. Declared once, in a module the client and the
/// server both import, it replaces the topic strings and hand-written encoding on both sides:
///
/// ```swift
/// // In the shared module (it imports LongLinkWire):
/// public enum Alerts: LongLinkTopic {
///     public typealias Message = Alert
///     public static let name = "alerts"
///     public static let kind = TopicKind.reliable
/// }
/// public enum Quotes: LongLinkTopic {          // one topic per symbol: quotes.AAPL, quotes.MSFT, …
///     public typealias Message = Quote
///     public static let name = "quotes.*"
///     public static let kind = TopicKind.bestEffort
/// }
///
/// // The server:
/// try await server.publish(Alerts.self, alert, to: "alice")
/// try await server.publish(Quotes.topic("AAPL"), quote, to: "alice")
///
/// // The client:
/// for await alert in client.pushes(Alerts.self) { show(alert) }
/// for await quote in client.pushes(Quotes.self) { tick(quote) }             // every symbol
/// for await quote in client.pushes(Quotes.topic("AAPL")) { tick(quote) }    // one
/// ```
///
/// A ``name`` with a wildcard token (`*` or `>`, see ``TopicPattern``) names a family of topics: the
/// server publishes to one of them, ``topic(_:)`` with the tokens the wildcards stand for, and the
/// client receives the whole family (its pushes matched as ``TopicPattern`` says) or one member.
/// Any other name is one topic, exactly as written.
///
/// Messages are `Codable` (encoded with the configured codec on each side, JSON by default) or a
/// ``LongLinkBinaryMessage``; the payload requirements have defaults for both. A message type that
/// is both implements them itself, to say which encoding it travels in.
public protocol LongLinkTopic: Sendable {
    /// The type of the topic's messages.
    associatedtype Message: Sendable
    /// The topic's name (`alerts`), or the pattern of a family of topics (`quotes.*`).
    static var name: String { get }
    /// Whether the server keeps each push until the client acknowledges it.
    static var kind: TopicKind { get }
    /// A message's payload (the server's side).
    static func encodeMessage(_ message: Message, with codec: any PayloadCodec) throws -> [UInt8]
    /// A message, from a push's payload (the client's side).
    static func decodeMessage(from payload: [UInt8], with codec: any PayloadCodec) throws -> Message
}

extension LongLinkTopic {
    /// The pattern ``name`` is, or nil when it names one topic (it has no wildcard token, or does
    /// not parse as a pattern: it is then a topic name exactly as written).
    public static var pattern: TopicPattern? {
        guard let pattern = try? TopicPattern(name), !pattern.isExact else { return nil }
        return pattern
    }

    /// One topic of the family ``name`` names: each wildcard token of the pattern replaced, in
    /// order, by one of `tokens` (`>` by all that are left, joined with dots). For a topic that is
    /// not a family, `topic()` is the topic itself. The name is checked where it is used: the
    /// server refuses to publish to one that is not a member of the family (tokens missing or left
    /// over, a token that is empty, has a dot or is a wildcard).
    public static func topic(_ tokens: String...) -> TopicName<Self> {
        TopicName(tokens: tokens)
    }
}

extension LongLinkTopic where Message: Encodable {
    /// Encodes the message with `codec`.
    public static func encodeMessage(_ message: Message, with codec: any PayloadCodec) throws -> [UInt8] {
        try codec.encode(message)
    }
}

extension LongLinkTopic where Message: Decodable {
    /// Decodes the message with `codec`.
    public static func decodeMessage(from payload: [UInt8], with codec: any PayloadCodec) throws -> Message {
        try codec.decode(Message.self, from: payload)
    }
}

extension LongLinkTopic where Message: LongLinkBinaryMessage {
    /// The message's own binary encoding.
    public static func encodeMessage(_ message: Message, with codec: any PayloadCodec) throws -> [UInt8] {
        try message.serializedBytes()
    }

    /// Decodes the message from its own binary encoding.
    public static func decodeMessage(from payload: [UInt8], with codec: any PayloadCodec) throws -> Message {
        try Message(serializedBytes: payload)
    }
}
