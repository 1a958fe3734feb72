internal import LongLinkWire

/// A finished request's reply as the de-duplication window keeps it for replay.
///
/// A payload of up to ``inlineCapacity`` bytes is copied into the entry itself, so that the
/// handler's array is freed right after its reply is sent rather than when the entry is evicted,
/// long after; larger payloads are kept by reference.
struct StoredReply: Sendable {
    /// The largest payload kept inline.
    static let inlineCapacity = 32

    /// What a login (or refresh) handler did to its connection, repeated when its reply is replayed
    /// or a copy that joined its execution is answered, so that such a copy leaves its connection
    /// bound as the original left its own, with the same credential expiry.
    struct Binding: Sendable, Equatable {
        /// The principal the handler bound (nil: it bound none, a refresh say).
        var principal: String?
        var exclusive = false
        /// The session's expiry the handler set (``RequestContext/setCredentialLifetime(_:)``), as
        /// an instant: a copy answered later expires when the original does, not a lifetime later.
        var credentialExpiry: ContinuousClock.Instant?
    }

    /// What a copy of a request whose reply was too large to keep is answered: it ran once, and
    /// running it again would not be exactly once.
    static let notKeptStatus = Frame.Status(
        code: .resourceExhausted,
        message: "the request ran once; its reply was too large to keep for a resend, and it is not run again")

    /// The marker kept in place of a reply too large for its client's budgets (see
    /// ``DedupeWindow``): it holds no bytes of the reply.
    static let notKept = StoredReply(marker: notKeptStatus)

    private enum Payload {
        case inline(count: Int, bytes: (UInt64, UInt64, UInt64, UInt64))
        case array([UInt8])
    }

    private let status: Frame.Status?
    private let payload: Payload

    /// The bytes this reply holds, as the window's byte budgets count them: its payload and its
    /// status message (the marker's message is one shared string, and counts nothing).
    let byteCount: Int

    init(_ response: Frame.Response) {
        status = response.status
        let bytes = response.payload
        byteCount = Self.byteCount(of: response)
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

    private init(marker status: Frame.Status) {
        self.status = status
        payload = .inline(count: 0, bytes: (0, 0, 0, 0))
        byteCount = 0
    }

    /// The bytes `response` would hold once stored (see ``byteCount``).
    static func byteCount(of response: Frame.Response) -> Int {
        response.payload.count + (response.status?.message.utf8.count ?? 0)
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
