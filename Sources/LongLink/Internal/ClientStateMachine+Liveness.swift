internal import LongLinkTransport

/// Liveness: what each link read and wrote since the heartbeat's last tick and since a probe, the
/// tick's decision (nothing, a `Ping`, or the link is dead), and the liveness probe.
extension ClientStateMachine {
    /// What the link read and wrote lately, for its heartbeat and its probe.
    struct LinkActivity {
        var receivedSinceTick = false
        var sentSinceTick = false
        var receivedSinceProbe = false
        /// A liveness probe waits for its answer (``ClientTimer/probe(_:)`` is armed).
        var probing = false
    }

    /// The link of `generation` read frames.
    mutating func read(on generation: UInt64) {
        activity[generation]?.receivedSinceTick = true
        activity[generation]?.receivedSinceProbe = true
    }

    /// A frame was written on the link of `generation`.
    mutating func wrote(on generation: UInt64) {
        activity[generation]?.sentSinceTick = true
    }

    /// The heartbeat of the current link of `generation` starts (or goes on after a migration) at
    /// `now`, ticking every `interval`.
    func startHeartbeat(_ generation: UInt64, now: ContinuousClock.Instant, interval: Duration) -> [Action] {
        [.schedule(.tick(generation), at: now.advanced(by: interval))]
    }

    /// The heartbeat ticked on the current link of `generation` (not ended) at `now`: nothing, a
    /// `Ping`, or the link is dead; the next tick comes `interval` on unless it is.
    mutating func heartbeatTicked(_ generation: UInt64, now: ContinuousClock.Instant, interval: Duration) -> [Action] {
        let seen = activity[generation] ?? LinkActivity()
        let action = links.heartbeatTick(generation, received: seen.receivedSinceTick, sent: seen.sentSinceTick) ?? .none
        activity[generation]?.receivedSinceTick = false
        activity[generation]?.sentSinceTick = false
        switch action {
        case .declareDead:
            return declareDead(generation, "nothing received for two heartbeat intervals")
        case .sendPing:
            return [.sendPing(generation)] + startHeartbeat(generation, now: now, interval: interval)
        case .none:
            return startHeartbeat(generation, now: now, interval: interval)
        }
    }

    /// Pings the current link of `generation` (not ended) now, and declares it dead if nothing
    /// comes back within `timeout`; nothing when it is not established or a probe runs already.
    mutating func probeLiveness(_ generation: UInt64, now: ContinuousClock.Instant, timeout: Duration) -> [Action] {
        guard links.isEstablished(generation), activity[generation]?.probing != true else { return [] }
        activity[generation]?.receivedSinceProbe = false
        activity[generation]?.probing = true
        return [.sendPing(generation), .schedule(.probe(generation), at: now.advanced(by: timeout))]
    }

    /// The probe of the current link of `generation` timed out (`ended`: the link ended meanwhile):
    /// without an answer, the link is dead.
    mutating func probeTimedOut(_ generation: UInt64, ended: Bool) -> [Action] {
        activity[generation]?.probing = false
        guard activity[generation]?.receivedSinceProbe != true, !ended else { return [] }
        return declareDead(generation, "no answer to a liveness probe")
    }

    /// The link of `generation` closed or was migrated from: its heartbeat and probe stop.
    func stopLiveness(_ generation: UInt64) -> [Action] {
        [.cancel(.tick(generation)), .cancel(.probe(generation))]
    }

    /// The link of `generation` is dead: counted, and closed at once unless it closes already.
    private mutating func declareDead(_ generation: UInt64, _ reason: String) -> [Action] {
        stats.deadLinks += 1
        var actions: [Action] = [.linkDead(generation, reason)]
        if links.closeRequested(generation) {
            actions.append(.close(generation, .immediately, error: LongLinkError(code: .connectionLost, message: reason)))
        }
        return actions
    }
}
