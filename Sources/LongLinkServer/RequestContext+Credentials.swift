/// Credentials with a lifetime, from a login or refresh handler.
extension RequestContext {
    /// Sets the session's credential to expire `lifetime` from now (by the server's
    /// ``ServerConfiguration/clock``), replacing an earlier expiry: a login handler calls it with
    /// the lifetime of the credential it accepted, a refresh handler with the new one's (or use
    /// ``Router/registerCredentialRefresh(_:handler:)``). When the expiry passes without a renewal,
    /// the session ends with `GoAway{UNAUTHENTICATED, "credential expired", reconnect: true}`: the
    /// client reconnects, logs in again with a new credential, and resends what was unanswered.
    ///
    /// Returns the new expiry, or nil when the session's credential had expired already: a renewal
    /// cannot revive a session whose `GoAway` is under way. One expiry per session, replaced in
    /// place: renewals hold nothing more, however many a client sends. A copy of the request
    /// answered from the de-duplication window sets its own session's expiry to the same instant.
    @discardableResult
    public func setCredentialLifetime(_ lifetime: Duration) -> ContinuousClock.Instant? {
        let expiry = session.setCredentialLifetime(lifetime)
        // Its copies answered from the de-duplication window (a login resent after its reply was
        // lost) expire at the same instant.
        if let run, let expiry { session.executionSetCredentialExpiry(run, expiry) }
        return expiry
    }

    /// When the session's credential expires, by the server's clock; nil when no handler set a
    /// lifetime (the session then never expires).
    public var credentialExpiry: ContinuousClock.Instant? { session.credentialExpiry }
}
