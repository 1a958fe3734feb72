/// The NAT in front of one proxied link (see ``NetworkFault/natIdleTimeout(_:onForgotten:for:)``): when its
/// mapping is due to be forgotten, and what becomes of bytes once it is. A plain value: the link feeds it the
/// time of each read and of its timer, and does what it answers.
struct NATMapping: Sendable, Hashable {
    typealias Instant = ContinuousClock.Instant

    /// What to do with bytes just read from either peer.
    enum TrafficAction: Sendable, Hashable {
        /// Pass them on: the mapping is alive (and now refreshed).
        case forward
        /// Discard them: the mapping is gone, and the NAT drops silently.
        case discard
        /// Discard them and reset the peer that sent them: the mapping is gone, and the NAT answers with resets.
        case discardAndReset
    }

    /// What the idle timer's firing means.
    enum ExpiryAction: Sendable, Hashable {
        /// The mapping is forgotten now: stop forwarding anything, both ways, for good.
        case forget
        /// Traffic came since the timer was armed: arm it again for this instant.
        case wait(until: Instant)
        /// No NAT, or the mapping is already gone.
        case nothing
    }

    /// The idle time after which the mapping is forgotten; nil while there is no NAT.
    private(set) var timeout: Duration?
    /// What the NAT does with bytes of a forgotten mapping.
    private(set) var onForgotten = NetworkFault.ForgottenMapping.drop
    /// Set once the mapping is forgotten, never cleared: the connection has no way through any more.
    private(set) var isForgotten = false
    private var lastTraffic: Instant?

    /// True while reads matter (the NAT is on, or the mapping is gone), so the link reads the clock only then.
    var isActive: Bool {
        timeout != nil || isForgotten
    }

    /// Turns the NAT on (or changes it) or, with a nil `timeout`, off; returns when the idle timer must fire, nil
    /// to have none. The idle time counts from the last traffic seen while the NAT was on, or from `now` when it
    /// was off.
    mutating func configure(_ timeout: Duration?, onForgotten: NetworkFault.ForgottenMapping, now: Instant)
        -> Instant?
    {
        guard !isForgotten else {
            // A forgotten mapping stays as it was forgotten.
            return nil
        }
        self.onForgotten = onForgotten
        guard let timeout else {
            self.timeout = nil
            lastTraffic = nil
            return nil
        }
        self.timeout = timeout
        let last = lastTraffic ?? now
        lastTraffic = last
        return last + timeout
    }

    /// Bytes arrived from a peer at `now`.
    mutating func traffic(now: Instant) -> TrafficAction {
        if isForgotten {
            return onForgotten.resets ? .discardAndReset : .discard
        }
        if timeout != nil {
            lastTraffic = now
        }
        return .forward
    }

    /// The idle timer fired at `now`.
    mutating func timerFired(now: Instant) -> ExpiryAction {
        guard !isForgotten, let timeout, let lastTraffic else {
            return .nothing
        }
        let due = lastTraffic + timeout
        guard now >= due else {
            return .wait(until: due)
        }
        isForgotten = true
        return .forget
    }
}
