import Foundation

/// Turns typed messages into payload bytes and back. Client and server use the same codecs, so a
/// typed call on one side meets a typed handler on the other.
public protocol PayloadCodec: Sendable {
    /// Encodes `value` as payload bytes.
    func encode<Value: Encodable>(_ value: Value) throws -> [UInt8]
    /// Decodes a `Value` from payload bytes.
    func decode<Value: Decodable>(_ type: Value.Type, from payload: [UInt8]) throws -> Value
}

/// The default codec: JSON through Foundation's `JSONEncoder` and `JSONDecoder`.
public struct JSONPayloadCodec: PayloadCodec {
    /// Creates the codec.
    public init() {}

    /// Encodes `value` as UTF-8 JSON.
    public func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        Array(try JSONEncoder().encode(value))
    }

    /// Decodes a `Value` from UTF-8 JSON.
    public func decode<Value: Decodable>(_ type: Value.Type, from payload: [UInt8]) throws -> Value {
        try JSONDecoder().decode(type, from: Data(payload))
    }
}
