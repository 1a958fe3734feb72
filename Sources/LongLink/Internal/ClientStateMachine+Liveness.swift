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
        /// Heartbeat ticks in a row with nothing read or written (an adaptive heartbeat's idle `Ping`
        /// follows a whole interval of them).
        var quietTicks = 0
        /// An adaptive heartbeat watches for an answer after a request (``ClientTimer/answer(_:)``
        /// is armed), with what was read since and whether another request was written meanwhile.
        var watching = false
        var receivedSinceWatch = false
        var requestWhileWatching = false
    }

    /// The link of `generation` read frames.
    mutating func read(on generation: UInt64) {
        activity[generation]?.receivedSinceTick = true
        activity[generation]?.receivedSinceProbe = true
        activity[generation]?.receivedSinceWatch = true
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
    /// `Ping`, or the link is dead; the next tick comes `interval` on unless it is. With
    /// `answerTimeout` (an adaptive heartbeat), its `Ping` is a probe: the link is dead without an
    /// answer within it, not only after two silent intervals.
    mutating func heartbeatTicked(
        _ generation: UInt64, now: ContinuousClock.Instant, interval: Duration, answerTimeout: Duration? = nil
    ) -> [Action] {
        let seen = activity[generation] ?? LinkActivity()
        let action = links.heartbeatTick(generation, received: seen.receivedSinceTick, sent: seen.sentSinceTick) ?? .none
        let quiet = !seen.receivedSinceTick && !seen.sentSinceTick
        activity[generation]?.quietTicks = quiet ? seen.quietTicks + 1 : 0
        activity[generation]?.receivedSinceTick = false
        activity[generation]?.sentSinceTick = false
        switch action {
        case .declareDead:
            return declareDead(generation, "nothing received for two heartbeat intervals")
        case .sendPing:
            // A probe running already times what this Ping answers too: the Ping goes out anyway.
            if let answerTimeout, case let probe = probeLiveness(generation, now: now, timeout: answerTimeout),
                !probe.isEmpty
            {
                return probe + startHeartbeat(generation, now: now, interval: interval)
            }
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
        [.cancel(.tick(generation)), .cancel(.probe(generation)), .cancel(.answer(generation))]
    }

    /// Whether the link of `generation` had a whole heartbeat interval with nothing read or written:
    /// a `Ping` now tests how long the network keeps an idle link.
    func isIdle(_ generation: UInt64) -> Bool {
        (activity[generation]?.quietTicks ?? 0) >= HeartbeatMonitor.ticksPerInterval
    }

    /// An adaptive heartbeat: a request was written on the link of `generation` at `now`. With
    /// nothing read within `timeout` the link is probed (pinged, and dead without an answer within
    /// another), so that a request sent into a black hole is noticed in a few answer timeouts,
    /// whatever the learned interval.
    mutating func requestWritten(on generation: UInt64, now: ContinuousClock.Instant, timeout: Duration) -> [Action] {
        guard links.isEstablished(generation), activity[generation] != nil else { return [] }
        guard activity[generation]?.watching != true else {
            activity[generation]?.requestWhileWatching = true
            return []
        }
        activity[generation]?.watching = true
        activity[generation]?.receivedSinceWatch = false
        activity[generation]?.requestWhileWatching = false
        return [.schedule(.answer(generation), at: now.advanced(by: timeout))]
    }

    /// The answer watch of the link of `generation` timed out (`ended`: the link ended meanwhile):
    /// silent since, it is probed; else a request written meanwhile is watched in turn.
    mutating func answerTimedOut(
        _ generation: UInt64, now: ContinuousClock.Instant, timeout: Duration, ended: Bool
    ) -> [Action] {
        guard let seen = activity[generation], !ended else { return [] }
        activity[generation]?.watching = false
        guard seen.receivedSinceWatch else { return probeLiveness(generation, now: now, timeout: timeout) }
        guard seen.requestWhileWatching else { return [] }
        return requestWritten(on: generation, now: now, timeout: timeout)
    }

    /// The link of `generation` is dead: counted, and closed at once unless it closes already.
    private mutating func declareDead(_ generation: UInt64, _ reason: String) -> [Action] {
        stats.deadLinks += 1
        var actions: [Action] = [.linkDead(generation, reason)]
        if links.closeRequested(generation) {
            // Marked, so that the state says "heartbeat timeout" (``DisconnectCause/init(_:)``).
            let error = LongLinkError(code: .connectionLost, message: reason, underlying: LossMark.heartbeatTimeout)
            actions.append(.close(generation, .immediately, error: error))
        }
        return actions
    }
}
