/// A request's identity in the durable de-dup window, as the bytes the file compares: the
/// principal (`p` then its name; empty for a connection without a login, all of which share one
/// budget), the `client_id` and the `request_id`.
struct DurableRequestKey: Sendable, Hashable {
    let principal: [UInt8]
    let clientID: [UInt8]
    let requestID: [UInt8]

    init(principal: String?, clientID: String, requestID: String) {
        self.principal = principal.map { [UInt8(ascii: "p")] + Array($0.utf8) } ?? []
        self.clientID = Array(clientID.utf8)
        self.requestID = Array(requestID.utf8)
    }

    /// A key as the file holds it.
    init(stored principal: [UInt8], _ clientID: [UInt8], _ requestID: [UInt8]) {
        self.principal = principal
        self.clientID = clientID
        self.requestID = requestID
    }

    /// The bytes an entry is charged before its reply: its three names.
    var charge: Int64 { Int64(principal.count + clientID.count + requestID.count) }
}

/// What the durable window found for a request (``DurableEngine/claim(_:term:window:)``).
enum DurableClaim: Sendable, Equatable {
    /// Nobody had it: the caller runs it, its claim now in the file.
    case run
    /// It runs in this process and has no reply yet.
    case running
    /// It ran; its stored reply.
    case finished([UInt8])
    /// It ran, and its reply was over the budgets: a copy is refused, never run again.
    case notKept
    /// It was running when the process that ran it stopped: a copy is answered `UNKNOWN`.
    case unknown
    /// The tenant is over a budget: not claimed, not run.
    case refused(DurableRefusal)
}

/// A claim refused by the budgets: which one, and when the scope's oldest entry expires.
struct DurableRefusal: Sendable, Equatable {
    enum Scope: Sendable, Equatable {
        case principalEntries, principalBytes, clientEntries, clientBytes, entries, bytes
    }

    var scope: Scope
    var retryAfter: Duration
}

/// How a reply was stored (``DurableEngine/finish(_:reply:window:)``).
enum DurableFinish: Sendable, Equatable {
    /// Kept for the window.
    case stored
    /// Over the budgets: a "not kept" mark in its place for the window.
    case notKept
    /// The entry held no running claim (never claimed, abandoned, or found unknown on opening).
    case notClaimed
}
