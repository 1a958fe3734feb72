internal import LongLinkTransport

/// Credentials with a lifetime: the machine's ``CredentialSchedule`` takes the events (a login's
/// credential and its success, a refresh's answer, the current link's end, the timer) and the
/// machine turns its decisions into the core's actions: a refresh to run, the close of a link whose
/// credential expired, and its one timer, ``ClientTimer/credential``, at the schedule's next deadline.
extension ClientStateMachine {
    /// The error a link whose credential expired is closed with, marked so that the state says
    /// "credential expired" (``DisconnectCause/init(_:)``).
    static var credentialExpired: LongLinkError {
        LongLinkError(code: .unauthenticated, message: "credential expired", underlying: LossMark.credentialExpired)
    }

    /// The login running on `generation` got a credential that expires at `expiresAt` (nil:
    /// never), or its reply said so.
    mutating func credentialForLogin(generation: UInt64, expiresAt: ContinuousClock.Instant?) {
        credentials?.loginExpires(generation: generation, at: expiresAt)
    }

    /// The login on `generation` succeeded and its link carries the session now: its chain starts
    /// (`random` in 0 ... 1 draws the jitter). Nothing when no login there asked for a credential.
    mutating func credentialLoggedIn(
        generation: UInt64, now: ContinuousClock.Instant, random: Double
    ) -> [Action] {
        guard let decided = credentials?.loginSucceeded(generation: generation, now: now, random: random) else {
            return []
        }
        return credentialActions(decided)
    }

    /// The current link ended (a reconnect's login starts the next chain), or the session did.
    mutating func credentialLinkEnded() -> [Action] {
        guard credentials != nil else { return [] }
        credentials?.currentLinkEnded()
        return credentialActions([])
    }

    /// The refresh `attempt` on `generation` was answered: the credential lives until `expiresAt`
    /// (nil: it does not expire, nothing more to refresh on this link).
    mutating func credentialRefreshed(
        generation: UInt64, attempt: UInt64, expiresAt: ContinuousClock.Instant?, now: ContinuousClock.Instant,
        random: Double
    ) -> [Action] {
        guard let expiresAt else {
            credentials?.refreshSucceededWithoutExpiry(generation: generation, attempt: attempt)
            return credentialActions([])
        }
        let decided =
            credentials?.refreshSucceeded(
                generation: generation, attempt: attempt, expiresAt: expiresAt, now: now, random: random) ?? []
        return credentialActions(decided)
    }

    /// The refresh `attempt` on `generation` failed: tried again after the backoff, the link stays.
    mutating func credentialRefreshFailed(
        generation: UInt64, attempt: UInt64, now: ContinuousClock.Instant, random: Double
    ) -> [Action] {
        let decided =
            credentials?.refreshFailed(generation: generation, attempt: attempt, now: now, random: random) ?? []
        return credentialActions(decided)
    }

    /// ``ClientTimer/credential`` fired at `now`: a refresh or the expiry is due.
    mutating func credentialTimerFired(now: ContinuousClock.Instant) -> [Action] {
        credentialActions(credentials?.due(now: now) ?? [])
    }

    /// The schedule's decisions as the core's actions, and its timer at its next deadline.
    private mutating func credentialActions(_ decided: [CredentialSchedule.Action]) -> [Action] {
        var actions: [Action] = []
        for decision in decided {
            switch decision {
            case .refresh(let generation, let attempt):
                guard let expiresAt = credentials?.live?.expiresAt else { continue }
                actions.append(.refreshCredential(generation, attempt: attempt, expiresAt: expiresAt))
            case .expire(let generation):
                // The client reconnects and logs in with a new credential from the provider.
                if links.role(of: generation) != nil, end(of: generation) == nil, links.closeRequested(generation) {
                    actions.append(.close(generation, .immediately, error: Self.credentialExpired))
                }
            }
        }
        actions.append(credentials?.wakeAt.map { .schedule(.credential, at: $0) } ?? .cancel(.credential))
        return actions
    }
}
