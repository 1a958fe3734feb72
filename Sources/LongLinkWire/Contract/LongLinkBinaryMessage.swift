/// A message that is its own binary encoding: protobuf messages, or any format the app writes by
/// hand. Typed requests, replies and pushes use it in place of the ``PayloadCodec``.
///
/// Its requirements are SwiftProtobuf's names, `init(serializedBytes:)` and `serializedBytes()`,
/// over `[UInt8]`. SwiftProtobuf's own methods cannot be the witnesses: they take more parameters
/// (`extensions:`, `partial:`, `options:`, with defaults), and Swift matches a requirement only
/// with a member of exactly its parameters. So the app writes the bridge once, in a file that
/// imports both modules, and then one line per message type:
///
/// ```swift
/// import LongLink
/// import SwiftProtobuf
///
/// extension LongLinkBinaryMessage where Self: SwiftProtobuf.Message {
///     init(serializedBytes bytes: [UInt8]) throws { try self.init(serializedBytes: bytes, extensions: nil) }
///     func serializedBytes() throws -> [UInt8] { try serializedBytes(partial: false) }
/// }
///
/// extension Quote: LongLinkBinaryMessage {}
/// extension Candles: LongLinkBinaryMessage {}
/// ```
///
/// The bridge's bodies name one of SwiftProtobuf's extra parameters, so that they call
/// SwiftProtobuf's methods and not themselves. LongLink does not depend on SwiftProtobuf, so the
/// bridge cannot live here. With SwiftProtobuf releases before 1.26, write
/// `try self.init(serializedData: Data(bytes))` and `Array(try serializedData())` instead.
public protocol LongLinkBinaryMessage: Sendable {
    /// Decodes the message from payload bytes.
    init(serializedBytes bytes: [UInt8]) throws
    /// Encodes the message as payload bytes.
    func serializedBytes() throws -> [UInt8]
}

extension LongLinkBinaryMessage {
    /// Decodes the message from payload bytes.
    @available(*, deprecated, renamed: "init(serializedBytes:)")
    public init(serializedPayload bytes: [UInt8]) throws {
        try self.init(serializedBytes: bytes)
    }

    /// Encodes the message as payload bytes.
    @available(*, deprecated, renamed: "serializedBytes()")
    public func serializedPayload() throws -> [UInt8] {
        try serializedBytes()
    }
}

/// Raw payload bytes as a typed message: what a ``LongLinkRequest`` whose request or reply is not
/// encoded at all (an image, a blob the app parses itself) uses as its type.
///
/// ```swift
/// struct Thumbnail: LongLinkRequest, Encodable {
///     typealias Reply = RawPayload
///     static let method = "media.thumbnail"
///     var id: String
/// }
/// let jpeg = try await client.send(Thumbnail(id: "a1")).bytes
/// ```
public struct RawPayload: LongLinkBinaryMessage, Hashable {
    /// The bytes, exactly as they travel.
    public var bytes: [UInt8]

    /// Wraps `bytes`.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Wraps the payload as it is.
    public init(serializedBytes bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The bytes, as they are.
    public func serializedBytes() -> [UInt8] {
        bytes
    }
}
