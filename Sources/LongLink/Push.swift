internal import LongLinkWire

/// A message the server pushed.
public struct Push: Sendable, Hashable {
    /// The per-principal sequence number of a reliable push; 0 for a best-effort push.
    public var seq: UInt64
    /// The topic.
    public var topic: String
    /// The encoded message.
    public var payload: [UInt8]

    /// Creates a push.
    public init(seq: UInt64, topic: String, payload: [UInt8]) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
    }

    /// Whether the server keeps the push until it is acknowledged (seq > 0).
    public var isReliable: Bool { seq > 0 }

    /// Decodes the payload as `T` with `codec` (JSON by default).
    public func decode<T: Decodable>(as type: T.Type, codec: some PayloadCodec = JSONPayloadCodec()) throws -> T {
        try codec.decode(type, from: payload)
    }
}

/// A typed request: the message, its method name and the type of its reply.
///
/// ```swift
/// struct EnterRoom: LongLinkRequest {
///     typealias Reply = Room
///     static let method = "room.enter"
///     var id: Int
/// }
/// extension LongLinkClient {
///     func enterRoom(_ request: EnterRoom) async throws -> Room { try await send(request) }
/// }
/// ```
public protocol LongLinkRequest: Encodable, Sendable {
    /// The reply's type.
    associatedtype Reply: Decodable & Sendable
    /// The method name the server routes on.
    static var method: String { get }
}
