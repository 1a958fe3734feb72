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
