/// Where a server keeps its de-duplication window beyond its own memory: a request identified by
/// (principal, client_id, request_id) runs once while the window lasts, on whichever server (of a
/// fleet sharing the store) it reaches first, and a copy resent later, or to another server, gets
/// the stored reply.
///
/// The server's own in-memory window still joins copies that reach the same server; this store
/// settles which server runs. The reply is opaque bytes to the store (the server encodes status
/// and payload). An operation that cannot reach the store for a while (a failover, a connection
/// being made again) throws ``LongLinkError/Code-swift.struct/unavailable``: the server makes it
/// again with backoff while the request's deadline allows, and answers the request `UNAVAILABLE`
/// without running it only when no attempt succeeded in time: it fails closed rather than risk a
/// second execution. Any other code is final: the request is answered at once. So a claim asked
/// again by the same instance may find the claim of an earlier attempt whose reply was lost: the
/// store must then answer ``DedupeClaim/run`` for it once (no handler ran for it), and never for
/// a claim that ran (`RedisDedupeStore` keeps the claims in doubt for that). A store
/// that bounds what each tenant holds throws ``LongLinkError/Code-swift.struct/resourceExhausted``
/// (its `underlying` a ``DedupeRefusal``) for a request over the budget, and the server answers it
/// `RESOURCE_EXHAUSTED`, not run.
///
/// Requirements take one request value each (``DedupeClaimRequest``, ``DedupeWaitRequest``,
/// ``DedupeFinishRequest``, ``DedupeAbandonRequest``), so that what a store is told grows by fields,
/// not by overloads. `LongLinkRedis` provides one on Redis (`RedisDedupeStore`).
public protocol DedupeStore: Sendable {
    /// Called once by the server before it accepts connections, with its
    /// ``ServerConfiguration/serverID``: a store may name its claims after it. Does nothing by
    /// default.
    func attach(serverID: String)

    /// Claims the request, or reports who has it. The claim's `runningFor` bounds it: a server that
    /// dies while running leaves it until then, after which a copy may run the request again.
    /// Throws ``LongLinkError/Code-swift.struct/outcomeUnknown`` when the server that ran it is
    /// known to have stopped before it answered, and, in a store that may have lost entries (a
    /// failover of asynchronously replicated storage), for a `resent` copy that finds no entry when
    /// a loss within `window` cannot be ruled out: the first copy may have run.
    func begin(_ claim: DedupeClaimRequest) async throws(LongLinkError) -> DedupeClaim

    /// Waits while the request runs elsewhere: returns ``DedupeClaim/finished(_:)`` once its reply
    /// is stored, ``DedupeClaim/run`` when it was given up and this caller claimed it (for
    /// `runningFor`), or ``DedupeClaim/running`` when the wait's deadline came first. Returns early
    /// when the calling task is cancelled. Throws ``LongLinkError/Code-swift.struct/outcomeUnknown``
    /// when the server running it stopped: the server answers it `UNKNOWN` and never runs it.
    func awaitOutcome(_ wait: DedupeWaitRequest) async throws(LongLinkError) -> DedupeClaim

    /// Stores the reply of a request this store's instance claimed, kept for the reply's `window`.
    /// Returns false when the claim is no longer this instance's (it expired). The server calls it
    /// once it has answered the request's caller, and does not wait for it.
    @discardableResult
    func finish(_ reply: DedupeFinishRequest) async throws(LongLinkError) -> Bool

    /// Forgets a request this instance claimed and did not finish (cancelled, timed out), so that
    /// a copy may run it. Returns false when the claim was not this instance's.
    @discardableResult
    func abandon(_ request: DedupeAbandonRequest) async throws(LongLinkError) -> Bool

    /// Closes the store's connections or files; later operations throw
    /// ``LongLinkError/Code-swift.struct/shutdown``. The server calls it when its
    /// ``LongLinkServer/run()`` ends. Does nothing by default.
    func shutdown() async
}

extension DedupeStore {
    /// Does nothing: the store's claims carry no server id.
    public func attach(serverID: String) {}

    /// Nothing to close.
    public func shutdown() async {}
}

/// What a ``DedupeStore`` found for a request.
public enum DedupeClaim: Sendable, Equatable {
    /// Nobody had the request: this caller runs it.
    case run
    /// It runs on some server (this one or another) and has no reply yet.
    case running
    /// It finished; the reply stored for it.
    case finished([UInt8])
}
