/// Where a fleet of servers keeps its de-duplication window: a request identified by (principal,
/// client_id, request_id) runs once, on whichever server it reaches first, while the window
/// lasts, and a copy resent to another server gets the stored reply.
///
/// The server's own in-memory window still joins copies that reach the same server; this store
/// settles which server runs. The reply is opaque bytes to the store (the server encodes status
/// and payload). An operation that cannot reach the store throws
/// ``LongLinkError/Code-swift.struct/unavailable``, and the server then answers the request
/// `UNAVAILABLE` without running it: it fails closed rather than risk a second execution. A store
/// that bounds what each tenant holds throws ``LongLinkError/Code-swift.struct/resourceExhausted``
/// (its `underlying` a ``SharedDedupeRefusal``) for a request over the budget, and the server
/// answers it `RESOURCE_EXHAUSTED`, not run.
///
/// `LongLinkRedis` provides one on Redis (`RedisDedupeStore`).
public protocol SharedDedupeStore: Sendable {
    /// Called once by the server before it accepts connections, with its
    /// ``ServerConfiguration/serverID``: a store may name its claims after it. Does nothing by default.
    func attach(serverID: String)

    /// Claims the request, or reports who has it. `runningFor` bounds the claim: a server that
    /// dies while running leaves it until then, after which a copy may run the request again.
    /// Throws ``LongLinkError/Code-swift.struct/outcomeUnknown`` when the server that ran it is
    /// known to have stopped before it answered.
    func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim

    /// Claims the request as ``begin(principal:clientID:requestID:runningFor:)`` does, told also
    /// whether the client marked it a copy of a request written on an earlier connection
    /// (`Request.resent`) and how long the server keeps a reply (`window`, its
    /// ``ServerConfiguration/dedupeWindow``). A store that may have lost entries (a failover of
    /// asynchronously replicated storage) throws ``LongLinkError/Code-swift.struct/outcomeUnknown``
    /// for a resent copy that finds no entry when a loss within `window` cannot be ruled out: the
    /// first copy may have run. The server calls this one; by default it ignores both and calls
    /// ``begin(principal:clientID:requestID:runningFor:)``.
    func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration, resent: Bool,
        window: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim

    /// Stores the reply of a request this store's instance claimed, kept for `window`. Returns
    /// false when the claim is no longer this instance's (it expired). The server calls it once it
    /// has answered the request's caller, and does not wait for it.
    @discardableResult
    func finish(
        principal: String?, clientID: String, requestID: String, reply: [UInt8], window: Duration
    ) async throws(LongLinkError) -> Bool

    /// Forgets a request this instance claimed and did not finish (cancelled, timed out), so that
    /// a copy may run it. Returns false when the claim was not this instance's.
    @discardableResult
    func abandon(principal: String?, clientID: String, requestID: String) async throws(LongLinkError) -> Bool

    /// Waits while the request runs elsewhere: returns ``SharedDedupeClaim/finished(_:)`` once its
    /// reply is stored, ``SharedDedupeClaim/run`` when it was given up and this caller claimed it
    /// (for `runningFor`), or ``SharedDedupeClaim/running`` when `deadline` came first. Returns
    /// early when the calling task is cancelled. Throws ``LongLinkError/Code-swift.struct/outcomeUnknown``
    /// when the server running it stopped: the server answers it `UNKNOWN` and never runs it.
    func awaitOutcome(
        principal: String?, clientID: String, requestID: String, runningFor: Duration,
        until deadline: ContinuousClock.Instant
    ) async throws(LongLinkError) -> SharedDedupeClaim

    /// Closes the store's connections; later operations throw
    /// ``LongLinkError/Code-swift.struct/shutdown``. The server calls it when its ``LongLinkServer/run()``
    /// ends.
    func shutdown() async
}

extension SharedDedupeStore {
    /// Does nothing: the store's claims carry no server id.
    public func attach(serverID: String) {}

    /// Calls ``begin(principal:clientID:requestID:runningFor:)``: a store that loses no entry has
    /// no use for `resent` and `window`.
    public func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration, resent: Bool,
        window: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        try await begin(principal: principal, clientID: clientID, requestID: requestID, runningFor: runningFor)
    }
}

/// What a ``SharedDedupeStore`` found for a request.
public enum SharedDedupeClaim: Sendable, Equatable {
    /// Nobody had the request: this caller runs it.
    case run
    /// It runs on some server (this one or another) and has no reply yet.
    case running
    /// It finished; the reply stored for it.
    case finished([UInt8])
}
