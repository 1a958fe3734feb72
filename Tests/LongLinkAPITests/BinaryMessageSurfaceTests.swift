// This file imports only LongLink, plus a stand-in of SwiftProtobuf's binary API with its exact
// declarations: a generated message conforms to LongLinkBinaryMessage through the bridge the docs
// give, written once, and then an empty extension per message type.
import LongLink
import Testing

/// SwiftProtobuf's `SwiftProtobufContiguousBytes`, with `[UInt8]` conforming as in SwiftProtobuf.
protocol SwiftProtobufContiguousBytes {
    init(repeating: UInt8, count: Int)
    init<S: Sequence>(_ sequence: S) where S.Element == UInt8
    var count: Int { get }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R
    mutating func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R
}

extension Array: SwiftProtobufContiguousBytes where Element == UInt8 {}

/// The types of the extra parameters of SwiftProtobuf's binary methods.
struct ExtensionMap {}
struct BinaryDecodingOptions { init() {} }
struct BinaryEncodingOptions { init() {} }

/// SwiftProtobuf's `Message`, reduced to what generated code gives: an empty message, and bytes in
/// and out (here, a message is its bytes).
protocol ProtobufMessage: Sendable {
    init()
    var unknownFields: [UInt8] { get set }
}

// SwiftProtobuf's binary methods, with their exact parameters and defaults, in an extension as
// SwiftProtobuf declares them.
extension ProtobufMessage {
    init<Bytes: SwiftProtobufContiguousBytes>(
        serializedBytes bytes: Bytes,
        extensions: ExtensionMap? = nil,
        partial: Bool = false,
        options: BinaryDecodingOptions = BinaryDecodingOptions()
    ) throws {
        self.init()
        unknownFields = bytes.withUnsafeBytes { Array($0) }
    }

    func serializedBytes<Bytes: SwiftProtobufContiguousBytes>(
        partial: Bool = false,
        options: BinaryEncodingOptions = BinaryEncodingOptions()
    ) throws -> Bytes {
        Bytes(unknownFields)
    }
}

/// A generated message.
struct Quotes_Tick: ProtobufMessage, Equatable {
    var unknownFields: [UInt8] = []
}

// The bridge, character for character as the docs give it (with `ProtobufMessage` for
// `SwiftProtobuf.Message`).
extension LongLinkBinaryMessage where Self: ProtobufMessage {
    init(serializedBytes bytes: [UInt8]) throws { try self.init(serializedBytes: bytes, extensions: nil) }
    func serializedBytes() throws -> [UInt8] { try serializedBytes(partial: false) }
}

extension Quotes_Tick: LongLinkBinaryMessage {}

/// A request whose reply is the generated message.
struct LatestTick: LongLinkRequest, Encodable {
    typealias Reply = Quotes_Tick
    static let method = "ticks.latest"
    var symbol: String
}

@Suite("A SwiftProtobuf message as a LongLinkBinaryMessage")
struct BinaryMessageSurfaceTests {
    @Test func aGeneratedMessageIsAReplyAndARequest() throws {
        let bytes: [UInt8] = [0x0A, 0x04, 0x41, 0x41, 0x50, 0x4C]
        let reply = try LatestTick.decodeReply(from: bytes, with: JSONPayloadCodec())
        #expect(reply.unknownFields == bytes)
        #expect(try reply.serializedBytes() == bytes)
        // SwiftProtobuf's own spelling still reads as it did: other byte types, the extra parameters.
        let viaProtobuf: [UInt8] = try reply.serializedBytes(partial: true)
        #expect(viaProtobuf == bytes)
        #expect(try Quotes_Tick(serializedBytes: bytes, partial: true) == reply)
    }

    @Test func rawPayloadKeepsItsBytes() throws {
        let raw = RawPayload(serializedBytes: [1, 2, 3])
        #expect(raw.serializedBytes() == [1, 2, 3])
        #expect(try LatestTickRaw.decodeReply(from: [9], with: JSONPayloadCodec()).bytes == [9])
    }
}

/// A request whose reply is raw bytes.
private struct LatestTickRaw: LongLinkRequest, Encodable {
    typealias Reply = RawPayload
    static let method = "ticks.latestRaw"
}
