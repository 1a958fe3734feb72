/// A ``DurableStore`` as the server's de-duplication window beyond its memory: a request runs once
/// while its window lasts, across restarts of the process too.
extension DurableStore: DedupeStore {
    /// Claims the request, or reports what the window holds for it. A claim lasts while the store
    /// is open (its runner is this process); `runningFor` is recorded only, and `window` is how long
    /// an "outcome unknown" mark lasts after a restart at least (a claim without one uses the last
    /// given, 120 s before any). `resent` changes nothing: the file loses no entry its sync policy
    /// kept. Throws ``LongLinkError/Code-swift.struct/outcomeUnknown`` for a request that was
    /// running when the process before stopped, and ``LongLinkError/Code-swift.struct/resourceExhausted``
    /// (its `underlying` a ``DedupeRefusal``) when the tenant is over a budget or the request's
    /// reply was not kept.
    public func begin(_ claim: DedupeClaimRequest) async throws(LongLinkError) -> DedupeClaim {
        let window = lastWindow.withLock { last in
            if let window = claim.window { last = window }
            return last
        }
        let key = DurableRequestKey(principal: claim.principal, clientID: claim.clientID, requestID: claim.requestID)
        return try Self.claim(
            await engine.claim(key, term: claim.runningFor, window: window), principal: claim.principal)
    }

    /// Waits while the request runs in this process: its reply once stored, `run` when it was
    /// given up and this caller claimed it, `running` at the deadline or on cancellation.
    public func awaitOutcome(_ wait: DedupeWaitRequest) async throws(LongLinkError) -> DedupeClaim {
        let key = DurableRequestKey(principal: wait.principal, clientID: wait.clientID, requestID: wait.requestID)
        let window = lastWindow.withLock { $0 }
        let found = try await engine.awaitOutcome(key, term: wait.runningFor, window: window, until: wait.deadline)
        return try Self.claim(found, principal: wait.principal)
    }

    /// Stores the reply of a request this store claimed, kept for its `window` (a "not kept" mark
    /// instead when it is over the byte budgets). Returns false when the entry held no running
    /// claim.
    @discardableResult
    public func finish(_ reply: DedupeFinishRequest) async throws(LongLinkError) -> Bool {
        let key = DurableRequestKey(principal: reply.principal, clientID: reply.clientID, requestID: reply.requestID)
        return try await engine.finish(key, reply: reply.reply, window: reply.window) != .notClaimed
    }

    /// Forgets a running claim, so that a copy may run the request. Returns false when there was none.
    @discardableResult
    public func abandon(_ request: DedupeAbandonRequest) async throws(LongLinkError) -> Bool {
        try await engine.abandon(
            DurableRequestKey(principal: request.principal, clientID: request.clientID, requestID: request.requestID))
    }

    /// The engine's answer as the protocol's, or its error.
    private static func claim(_ found: DurableClaim, principal: String?) throws(LongLinkError) -> DedupeClaim {
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
                underlying: DedupeRefusal(retryAfter: nil, ran: true))
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
                underlying: DedupeRefusal(retryAfter: refusal.retryAfter))
        }
    }
}
