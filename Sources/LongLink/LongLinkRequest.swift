/// A typed request: the message, its method name and the type of its reply.
///
/// ```swift
/// struct EnterRoom: LongLinkRequest, Codable {
///     typealias Reply = Room
///     static let method = "room.enter"
///     var id: Int
/// }
/// extension LongLinkClient {
///     func enterRoom(_ request: EnterRoom) async throws -> Room { try await send(request) }
/// }
/// ```
///
/// The request and its reply are each `Codable` (encoded with ``ClientConfiguration/codec``, JSON by
/// default), a ``LongLinkBinaryMessage`` (a protobuf message), or ``RawPayload`` (bytes as they
/// are); the two sides need not match. The payload requirements below have default
/// implementations for those three, so a conforming type names its method and reply and nothing
/// else. A type that is both `Encodable` and a ``LongLinkBinaryMessage`` says which encoding it
/// means by implementing ``encodePayload(with:)`` itself (and a reply type that is both, by
/// implementing ``decodeReply(from:with:)``).
public protocol LongLinkRequest: Sendable {
    /// The reply's type.
    associatedtype Reply: Sendable
    /// The method name the server routes on.
    static var method: String { get }
    /// The request's payload.
    func encodePayload(with codec: any PayloadCodec) throws -> [UInt8]
    /// The reply, from the reply's payload.
    static func decodeReply(from payload: [UInt8], with codec: any PayloadCodec) throws -> Reply
}

extension LongLinkRequest where Self: Encodable {
    /// Encodes the request with `codec`.
    public func encodePayload(with codec: any PayloadCodec) throws -> [UInt8] {
        try codec.encode(self)
    }
}

extension LongLinkRequest where Self: LongLinkBinaryMessage {
    /// The request's own binary encoding.
    public func encodePayload(with codec: any PayloadCodec) throws -> [UInt8] {
        try serializedBytes()
    }
}

extension LongLinkRequest where Reply: Decodable {
    /// Decodes the reply with `codec`.
    public static func decodeReply(from payload: [UInt8], with codec: any PayloadCodec) throws -> Reply {
        try codec.decode(Reply.self, from: payload)
    }
}

extension LongLinkRequest where Reply: LongLinkBinaryMessage {
    /// Decodes the reply from its own binary encoding.
    public static func decodeReply(from payload: [UInt8], with codec: any PayloadCodec) throws -> Reply {
        try Reply(serializedBytes: payload)
    }
}

extension LongLinkRequest {
    /// Decodes a reply, failing with ``LongLinkError/Code-swift.struct/decodingFailed`` naming the
    /// method and the reply's type.
    static func decodedReply(_ payload: [UInt8], codec: any PayloadCodec) throws(LongLinkError) -> Reply {
        do {
            return try decodeReply(from: payload, with: codec)
        } catch {
            throw LongLinkError(
                code: .decodingFailed, message: "the reply of \(method) did not decode as \(Reply.self)",
                underlying: error)
        }
    }
}
