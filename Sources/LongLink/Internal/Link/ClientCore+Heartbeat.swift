internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    // MARK: Heartbeat and liveness

    /// The heartbeat's tick interval on `link`: a share of its heartbeat, longer in the background.
    private func tickInterval(_ link: Link) -> Duration {
        // An adaptive interval is as long as the NAT allows already: never stretched in the background.
        let stretches = machine.supervision.inBackground && configuration.heartbeatPolicy.adaptive == nil
        let multiplier = stretches ? configuration.background.heartbeatMultiplier : 1
        return link.heartbeat * multiplier / HeartbeatMonitor.ticksPerInterval
    }

    /// The heartbeat of the current `link` starts.
    func scheduleTick(_ link: Link) {
        run(machine.startHeartbeat(link.generation, now: clock.now, interval: tickInterval(link)))
    }

    /// A heartbeat tick: the machine decides between nothing, a Ping, and declaring the link dead
    /// (``ClientStateMachine/heartbeatTicked(_:now:interval:)``).
    func tick(_ generation: UInt64) {
        guard let link = liveLink, link.generation == generation else { return }
        let pinged = machine.pings[generation]?.nonce
        run(
            machine.heartbeatTicked(
                generation, now: clock.now, interval: tickInterval(link),
                answerTimeout: configuration.heartbeatPolicy.adaptive?.answerTimeout))
        heartbeatTicked(link, pingedBefore: pinged)
    }

    func sendPing(on link: Link) {
        let nonce = Self.randomNonce()
        machine.pingSent(on: link.generation, nonce: nonce, at: clock.now)
        send(.ping(Frame.Ping(nonce: nonce)), on: link)
    }

    /// A `Ping` nonce: random, so that a server cannot answer a ping before it arrives (and look
    /// closer than it is, or end a push barrier early). Never 0, the field's absence on the wire.
    nonisolated static func randomNonce() -> UInt64 {
        UInt64.random(in: 1...UInt64.max)
    }

    /// Pings now and replaces the link if nothing comes back within the probe timeout
    /// (``ClientStateMachine/probeLiveness(_:now:timeout:)``).
    func probeLiveness() {
        guard let link = liveLink else { return }
        run(machine.probeLiveness(link.generation, now: clock.now, timeout: configuration.livenessProbeTimeout))
    }

    /// The liveness probe's timeout passed on the link of `generation`.
    func probeTimedOut(_ generation: UInt64) {
        guard let link, link.generation == generation else { return }
        run(machine.probeTimedOut(generation, ended: machine.hasEnded(generation)))
    }

    // MARK: App lifecycle and network

    /// The machine decides (``ClientStateMachine/networkChanged(retryWaiting:)``).
    func networkDidChange() {
        run(machine.networkChanged(retryWaiting: waiters.retry != nil))
    }

    /// The machine decides (``ClientStateMachine/setBackground(_:retryWaiting:)``).
    func setBackground(_ background: Bool) {
        run(machine.setBackground(background, retryWaiting: waiters.retry != nil))
    }

    var pausesReconnection: Bool { machine.supervision.inBackground && configuration.background.pausesReconnection }

    /// Waits before the next attempt; ends early on a network change, foreground, or shutdown.
    func waitToRetry(_ delay: Duration?) async -> RetryWake {
        await withCheckedContinuation { continuation in
            if machine.shuttingDown {
                continuation.resume(returning: .shutdown)
                return
            }
            if let wake = machine.supervision.pendingWake {
                machine.supervision.pendingWake = nil
                continuation.resume(returning: wake)
                return
            }
            waiters.retry = continuation
            if let delay {
                schedule(.retry, at: clock.now.advanced(by: delay))
            }
        }
    }

    func wakeRetry(_ wake: RetryWake) {
        cancelTimer(.retry)
        guard let waiter = waiters.retry else { return }
        waiters.retry = nil
        waiter.resume(returning: wake)
    }

    /// Clears a wake-up that arrived while connected (it concerned the old link).
    func clearPendingWake() {
        if machine.supervision.pendingWake == .networkChanged { machine.supervision.pendingWake = nil }
    }

    func setHasAlternatives(_ value: Bool) { machine.supervision.hasAlternatives = value }

    /// The network changes and endpoint lists counted so far (see ``Supervision/changes``).
    var supervisedChanges: ChangeCounters { machine.supervision.changes }

    /// The app said the network is metered.
    var networkIsExpensive: Bool { machine.supervision.networkIsExpensive }

    func setNetworkIsExpensive(_ value: Bool) { machine.supervision.networkIsExpensive = value }

    func countFailedConnect() { machine.stats.failedConnects += 1 }

    /// The endpoint list changed at run time: the supervisor looks at it now (a current endpoint no
    /// longer listed is left, make before break).
    func endpointsChanged() {
        run(machine.endpointsChanged(liveLink: liveLink?.generation, retryWaiting: waiters.retry != nil))
    }
}
