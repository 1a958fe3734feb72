/// A ``DurableStore`` as the server's de-duplication window: a request runs once while its window
/// lasts, across restarts of the process too.
extension DurableStore: SharedDedupeStore {
    /// Claims the request, or reports what the window holds for it. A claim lasts while the store
    /// is open (its runner is this process); `runningFor` is recorded only. Throws
    /// ``LongLinkError/Code-swift.struct/outcomeUnknown`` for a request that was running when the
    /// process before stopped, and ``LongLinkError/Code-swift.struct/resourceExhausted`` (its
    /// `underlying` a ``SharedDedupeRefusal``) when the tenant is over a budget or the request's
    /// reply was not kept.
    public func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        try await begin(
            principal: principal, clientID: clientID, requestID: requestID, runningFor: runningFor, resent: false,
            window: lastWindow.withLock { $0 })
    }

    /// Claims as ``begin(principal:clientID:requestID:runningFor:)`` does; `window` is how long an
    /// "outcome unknown" mark lasts after a restart at least (the calls without one use the last
    /// given, 120 s before any). `resent` changes nothing: the file loses no entry its sync policy
    /// kept.
    public func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration, resent: Bool,
        window: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        lastWindow.withLock { $0 = window }
        let key = DurableRequestKey(principal: principal, clientID: clientID, requestID: requestID)
        return try Self.claim(await engine.claim(key, term: runningFor, window: window), principal: principal)
    }

    /// Stores the reply of a request this store claimed, kept for `window` (a "not kept" mark
    /// instead when it is over the byte budgets). Returns false when the entry held no running
    /// claim.
    @discardableResult
    public func finish(
        principal: String?, clientID: String, requestID: String, reply: [UInt8], window: Duration
    ) async throws(LongLinkError) -> Bool {
        let key = DurableRequestKey(principal: principal, clientID: clientID, requestID: requestID)
        return try await engine.finish(key, reply: reply, window: window) != .notClaimed
    }

    /// Forgets a running claim, so that a copy may run the request. Returns false when there was none.
    @discardableResult
    public func abandon(principal: String?, clientID: String, requestID: String) async throws(LongLinkError) -> Bool {
        try await engine.abandon(DurableRequestKey(principal: principal, clientID: clientID, requestID: requestID))
    }

    /// Waits while the request runs in this process: its reply once stored, `run` when it was
    /// given up and this caller claimed it, `running` at `deadline` or on cancellation.
    public func awaitOutcome(
        principal: String?, clientID: String, requestID: String, runningFor: Duration,
        until deadline: ContinuousClock.Instant
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        let key = DurableRequestKey(principal: principal, clientID: clientID, requestID: requestID)
        let window = lastWindow.withLock { $0 }
        let found = try await engine.awaitOutcome(key, term: runningFor, window: window, until: deadline)
        return try Self.claim(found, principal: principal)
    }

    /// The engine's answer as the protocol's, or its error.
    private static func claim(_ found: DurableClaim, principal: String?) throws(LongLinkError) -> SharedDedupeClaim {
        switch found {
        case .run: return .run
        case .running: return .running
        case .finished(let reply): return .finished(reply)
        case .unknown:
            throw LongLinkError(
                code: .outcomeUnknown,
                message: "the server stopped while running this request; it may or may not have taken effect")
        case .notKept:
            throw LongLinkError(
                code: .resourceExhausted,
                message:
                    "this request ran, but its reply was over the stored-reply budget and was not kept; it is not run"
                    + " again",
                underlying: SharedDedupeRefusal(retryAfter: nil, ran: true))
        case .refused(let refusal):
            let owner = principal == nil ? "connections without a login" : "this principal"
            let scope =
                switch refusal.scope {
                case .principalEntries: "\(owner) holds as many stored requests as the store keeps"
                case .principalBytes: "\(owner) holds as many bytes of stored replies as the store keeps"
                case .clientEntries: "this client holds as many stored requests as the store keeps"
                case .clientBytes: "this client holds as many bytes of stored replies as the store keeps"
                case .entries: "the store holds as many stored requests as it keeps"
                case .bytes: "the store holds as many bytes of stored replies as it keeps"
                }
            let milliseconds = DurableWriter.milliseconds(refusal.retryAfter)
            throw LongLinkError(
                code: .resourceExhausted,
                message: "\(scope); the request did not run. Retry after \(milliseconds) ms",
                underlying: SharedDedupeRefusal(retryAfter: refusal.retryAfter))
        }
    }
}
