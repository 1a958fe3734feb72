internal import LongLinkTransport

/// Decides, after each re-probe while connected, whether to move the link to a better endpoint:
/// the hysteresis that keeps noisy round trips from moving clients back and forth.
///
/// An endpoint is a migration target once its cost stayed below ``Balancing/Migration/improvement``
/// times the current one's in at least ``Balancing/Migration/minimumProbes`` probes in a row that
/// span at least ``Balancing/Migration/sustain``, and the last move is at least
/// ``Balancing/Migration/minimumInterval`` (plus jitter) ago. A plain value; time is passed in.
struct MigrationDecider: Sendable {
    let policy: Balancing.Migration
    private(set) var candidate: Endpoint?
    private var since: ContinuousClock.Instant?
    private var streak = 0
    private var nextMoveAllowed: ContinuousClock.Instant?

    init(policy: Balancing.Migration) {
        self.policy = policy
    }

    /// One re-probe's outcome: the current endpoint's cost and the best other endpoint with its
    /// cost (nil when no other answered). Returns the endpoint to move to, if it is time.
    mutating func observe(
        currentCost: Double, best: (endpoint: Endpoint, cost: Double)?, at now: ContinuousClock.Instant
    ) -> Endpoint? {
        guard let best, best.cost < currentCost * policy.improvement else {
            reset()
            return nil
        }
        if best.endpoint != candidate {
            candidate = best.endpoint
            since = now
            streak = 0
        }
        streak += 1
        guard let since, streak >= policy.minimumProbes, now - since >= policy.sustain else { return nil }
        if let nextMoveAllowed, now < nextMoveAllowed { return nil }
        return best.endpoint
    }

    /// A move happened (or the link was replaced): the streak starts over, and the next move waits
    /// for the minimum interval plus a random share (`random` in 0...1) of its jitter.
    mutating func moved(at now: ContinuousClock.Instant, random: Double) {
        reset()
        let interval = policy.minimumInterval * (1 + policy.jitter * min(1, max(0, random)))
        nextMoveAllowed = now.advanced(by: interval)
    }

    /// The link changed without a migration (a failover): what was observed was about another link.
    mutating func reset() {
        candidate = nil
        since = nil
        streak = 0
    }
}
