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
///
/// Give it an encoder and a decoder of your own for other key or date strategies:
///
/// ```swift
/// let encoder = JSONEncoder()
/// encoder.keyEncodingStrategy = .convertToSnakeCase
/// let decoder = JSONDecoder()
/// decoder.keyDecodingStrategy = .convertFromSnakeCase
/// configuration.codec = JSONPayloadCodec(encoder: encoder, decoder: decoder)
/// ```
///
/// The codec keeps the two objects it is given; change their settings before, not after.
public struct JSONPayloadCodec: PayloadCodec {
    private let encoder: JSONEncoder
    private let decoder: JSONDecoder

    /// Creates the codec with a default `JSONEncoder` and `JSONDecoder`.
    public init() {
        self.init(encoder: JSONEncoder(), decoder: JSONDecoder())
    }

    /// Creates the codec with the given encoder and decoder (their strategies apply to every
    /// payload).
    public init(encoder: JSONEncoder, decoder: JSONDecoder) {
        self.encoder = encoder
        self.decoder = decoder
    }

    /// Encodes `value` as UTF-8 JSON.
    public func encode<Value: Encodable>(_ value: Value) throws -> [UInt8] {
        Array(try encoder.encode(value))
    }

    /// Decodes a `Value` from UTF-8 JSON.
    public func decode<Value: Decodable>(_ type: Value.Type, from payload: [UInt8]) throws -> Value {
        try decoder.decode(type, from: Data(payload))
    }
}
