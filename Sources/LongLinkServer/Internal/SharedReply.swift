internal import LongLinkWire

/// A reply as the server stores it in a fleet's shared de-duplication window: the method it
/// answered, then the response frame, so that a copy calling another method under the same
/// request id is refused rather than given this reply (as one server's window does).
///
/// Layout: `M`, the method's length (4 bytes, big-endian), the method, `Frame.response` with an
/// empty request id. Bytes without the `M` layout (stored by an older server) are read as the
/// bare frame, with no method to check.
enum SharedReply {
    static func encode(_ response: Frame.Response, method: String) -> [UInt8] {
        var bare = response
        bare.requestID = ""
        let name = Array(method.utf8)
        let count = UInt32(name.count)
        var bytes: [UInt8] = [
            UInt8(ascii: "M"), UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF),
        ]
        bytes.append(UInt8(count & 0xFF))
        bytes += name
        Frame.response(bare).encode(into: &bytes)
        return bytes
    }

    /// The stored response and the method it answered (nil when the bytes carry none); nil when
    /// the bytes are no reply.
    static func decode(_ bytes: [UInt8]) -> (method: String?, response: Frame.Response)? {
        if bytes.count >= 5, bytes[0] == UInt8(ascii: "M") {
            let count = bytes[1...4].reduce(0) { $0 << 8 | Int($1) }
            if count <= bytes.count - 5,
                case .response(let response)? = try? Frame(decoding: Array(bytes[(5 + count)...]))
            {
                return (String(decoding: bytes[5..<(5 + count)], as: UTF8.self), response)
            }
        }
        guard case .response(let response)? = try? Frame(decoding: bytes) else { return nil }
        return (nil, response)
    }
}
