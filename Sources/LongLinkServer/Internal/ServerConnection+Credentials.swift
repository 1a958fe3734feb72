internal import LongLinkTransport
internal import LongLinkWire

/// Credentials with a lifetime: a login or refresh handler sets when the session's credential
/// expires, and the connection ends the session then with `GoAway{UNAUTHENTICATED, "credential
/// expired", reconnect: true}` (see Protocol.md, "Credential expiry"). One expiry and one timer per
/// connection, replaced by each renewal: a flood of refreshes grows nothing.
extension ServerConnection {
    /// The `GoAway` that ends a session whose credential expired: the client reconnects and logs
    /// in again with a new credential; its unanswered requests are resent as after any `GoAway`.
    static let credentialExpiredReason = "credential expired"

    /// Sets the session's credential to expire `lifetime` from now by the server's clock, replacing
    /// an earlier expiry (any thread). Returns the new expiry, or nil when the session had expired
    /// already (a renewal cannot revive it: its `GoAway` is under way).
    @discardableResult
    func setCredentialLifetime(_ lifetime: Duration) -> ContinuousClock.Instant? {
        setCredentialExpiry(core.clock.now.advanced(by: max(lifetime, .zero)))
    }

    /// Sets the session's credential to expire at `expiry`, as ``setCredentialLifetime(_:)`` does: a
    /// copy of a login or refresh answered from the de-duplication window expires when the
    /// original's session does.
    @discardableResult
    func setCredentialExpiry(_ expiry: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let now = core.clock.now
        let accepted = credentials.withLock { state -> Bool in
            if let current = state.expiresAt, current <= now { return false }
            state.expiresAt = expiry
            state.generation &+= 1
            return true
        }
        guard accepted else { return nil }
        onLoop { [self] in armExpiryTimer() }
        return expiry
    }

    /// When the session's credential expires; nil when no handler set a lifetime.
    var credentialExpiry: ContinuousClock.Instant? {
        credentials.withLock { $0.expiresAt }
    }

    /// Whether the session's credential expired already (a refresh arriving after it is refused).
    var credentialExpired: Bool {
        let now = core.clock.now
        return credentials.withLock { state in state.expiresAt.map { $0 <= now } ?? false }
    }

    /// Arms the one expiry timer at the current expiry (on the loop), replacing the previous one.
    private func armExpiryTimer() {
        guard session.phase != .closed, let expiry = credentialExpiry else { return }
        expiryTimer?.cancel()
        let generation = credentials.withLock { $0.generation }
        expiryTimer = core.clock.schedule(at: expiry, on: loop) { [self] in
            // A renewal after this timer was armed re-armed its own: this one is stale.
            guard credentials.withLock({ $0.generation }) == generation else { return }
            expiryTimer = nil
            core.counters.credentialExpiries.increment()
            goAway(
                code: .unauthenticated, reason: Self.credentialExpiredReason, reconnect: true, retryAfter: .zero)
        }
    }
}

/// The credential state a connection shares with its handlers' threads.
struct CredentialState: Sendable {
    var expiresAt: ContinuousClock.Instant?
    /// Bumped by every renewal, so that a timer armed for an earlier expiry does nothing.
    var generation: UInt64 = 0
}
