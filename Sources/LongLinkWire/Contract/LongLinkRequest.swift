/// A typed request: the message, its method name and the type of its reply. One declaration
/// serves both sides: the client sends it (`client.send(_:)`, `client.subscribe(_:)`) and the
/// server routes it (`router.register(EnterRoom.self) { request, context in … }`), so the
/// method's name and its types are written once, in a module both import.
///
/// ```swift
/// // In a module the app and the backend share (it imports LongLinkWire):
/// public struct EnterRoom: LongLinkRequest, Codable {
///     public typealias Reply = Room
///     public static let method = "room.enter"
///     public var room: Int
///     public var user: String
/// }
/// ```
///
/// The request and its reply are each `Codable` (encoded with the configured codec, JSON by
/// default), a ``LongLinkBinaryMessage`` (a protobuf message), or ``RawPayload`` (bytes as they
/// are); the two need not match. The payload requirements below have default implementations for
/// those three, so a conforming type names its method and reply and nothing else.
///
/// The client needs only the two client-side requirements (the request encodes, the reply
/// decodes); a type that lives in the client alone may be just `Encodable` with a `Decodable`
/// reply. The server needs the other two (the request decodes, the reply encodes); their default
/// for a type that cannot do so throws ``LongLinkError/Code-swift.struct/unimplemented``, which the
/// server answers as an error: make a shared contract `Codable` on both ends. A type that is both
/// `Codable` and a ``LongLinkBinaryMessage`` says which encoding it means by implementing the
/// requirements itself (the defaults for it would be ambiguous).
public protocol LongLinkRequest: Sendable {
    /// The reply's type.
    associatedtype Reply: Sendable
    /// The method name the server routes on.
    static var method: String { get }
    /// The request's payload (the client's side).
    func encodePayload(with codec: any PayloadCodec) throws -> [UInt8]
    /// The reply, from the reply's payload (the client's side).
    static func decodeReply(from payload: [UInt8], with codec: any PayloadCodec) throws -> Reply
    /// The request, from its payload (the server's side).
    static func decodePayload(_ payload: [UInt8], with codec: any PayloadCodec) throws -> Self
    /// The reply's payload (the server's side).
    static func encodeReply(_ reply: Reply, with codec: any PayloadCodec) throws -> [UInt8]
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

// The server's side. The unconstrained defaults keep client-only types (an `Encodable` request, a
// `Decodable` reply) conforming as they did before the server could use the protocol.

extension LongLinkRequest {
    /// Throws ``LongLinkError/Code-swift.struct/unimplemented``: the request is neither
    /// `Decodable` nor a ``LongLinkBinaryMessage``, so a server cannot read it.
    public static func decodePayload(_ payload: [UInt8], with codec: any PayloadCodec) throws -> Self {
        throw LongLinkError(
            code: .unimplemented,
            message: "\(Self.self) is neither Decodable nor a LongLinkBinaryMessage: implement decodePayload(_:with:)")
    }

    /// Throws ``LongLinkError/Code-swift.struct/unimplemented``: the reply is neither `Encodable`
    /// nor a ``LongLinkBinaryMessage``, so a server cannot write it.
    public static func encodeReply(_ reply: Reply, with codec: any PayloadCodec) throws -> [UInt8] {
        throw LongLinkError(
            code: .unimplemented,
            message: "\(Reply.self) is neither Encodable nor a LongLinkBinaryMessage: implement encodeReply(_:with:)")
    }
}

extension LongLinkRequest where Self: Decodable {
    /// Decodes the request with `codec`.
    public static func decodePayload(_ payload: [UInt8], with codec: any PayloadCodec) throws -> Self {
        try codec.decode(Self.self, from: payload)
    }
}

extension LongLinkRequest where Self: LongLinkBinaryMessage {
    /// Decodes the request from its own binary encoding.
    public static func decodePayload(_ payload: [UInt8], with codec: any PayloadCodec) throws -> Self {
        try Self(serializedBytes: payload)
    }
}

extension LongLinkRequest where Reply: Encodable {
    /// Encodes the reply with `codec`.
    public static func encodeReply(_ reply: Reply, with codec: any PayloadCodec) throws -> [UInt8] {
        try codec.encode(reply)
    }
}

extension LongLinkRequest where Reply: LongLinkBinaryMessage {
    /// The reply's own binary encoding.
    public static func encodeReply(_ reply: Reply, with codec: any PayloadCodec) throws -> [UInt8] {
        try reply.serializedBytes()
    }
}

// A type that is both would have two equal defaults; these, more specific, make it say which.

extension LongLinkRequest where Self: Decodable & LongLinkBinaryMessage {
    /// Throws ``LongLinkError/Code-swift.struct/unimplemented``: the request is both `Decodable` and
    /// a ``LongLinkBinaryMessage``; implement this requirement to say which encoding it travels in.
    public static func decodePayload(_ payload: [UInt8], with codec: any PayloadCodec) throws -> Self {
        throw LongLinkError(
            code: .unimplemented,
            message: "\(Self.self) is both Decodable and a LongLinkBinaryMessage: implement decodePayload(_:with:)")
    }
}

extension LongLinkRequest where Reply: Encodable & LongLinkBinaryMessage {
    /// Throws ``LongLinkError/Code-swift.struct/unimplemented``: the reply is both `Encodable` and a
    /// ``LongLinkBinaryMessage``; implement this requirement to say which encoding it travels in.
    public static func encodeReply(_ reply: Reply, with codec: any PayloadCodec) throws -> [UInt8] {
        throw LongLinkError(
            code: .unimplemented,
            message: "\(Reply.self) is both Encodable and a LongLinkBinaryMessage: implement encodeReply(_:with:)")
    }
}

extension LongLinkRequest {
    /// Decodes a reply, failing with ``LongLinkError/Code-swift.struct/decodingFailed`` naming the
    /// method and the reply's type.
    package static func decodedReply(_ payload: [UInt8], codec: any PayloadCodec) throws(LongLinkError) -> Reply {
        do {
            return try decodeReply(from: payload, with: codec)
        } catch {
            throw LongLinkError(
                code: .decodingFailed, message: "the reply of \(method) did not decode as \(Reply.self)",
                underlying: error)
        }
    }
}
