internal import LongLinkWire

/// A finished request's reply as the de-duplication window keeps it for replay.
///
/// A payload of up to ``inlineCapacity`` bytes is copied into the entry itself, so that the
/// handler's array is freed right after its reply is sent rather than when the entry is evicted,
/// long after; larger payloads are kept by reference.
struct StoredReply: Sendable {
    /// The largest payload kept inline.
    static let inlineCapacity = 32

    private enum Payload {
        case inline(count: Int, bytes: (UInt64, UInt64, UInt64, UInt64))
        case array([UInt8])
    }

    private let status: Frame.Status?
    private let payload: Payload

    init(_ response: Frame.Response) {
        status = response.status
        let bytes = response.payload
        guard bytes.count <= Self.inlineCapacity else {
            payload = .array(bytes)
            return
        }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { words in
            bytes.withUnsafeBytes { words.copyMemory(from: $0) }
        }
        payload = .inline(count: bytes.count, bytes: words)
    }

    /// The stored reply as a response with an empty request id (the caller sets it).
    var response: Frame.Response {
        switch payload {
        case .array(let bytes):
            return Frame.Response(payload: bytes, status: status)
        case .inline(let count, var words):
            let bytes = withUnsafeBytes(of: &words) { Array($0.prefix(count)) }
            return Frame.Response(payload: bytes, status: status)
        }
    }
}
