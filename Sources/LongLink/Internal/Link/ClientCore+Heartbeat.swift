internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    // MARK: Heartbeat and liveness

    func scheduleTick(_ link: Link) {
        let multiplier = machine.supervision.inBackground ? configuration.background.heartbeatMultiplier : 1
        let interval = link.heartbeat * multiplier
        let generation = link.generation
        link.tick = clock.schedule(
            at: clock.now.advanced(by: interval / HeartbeatMonitor.ticksPerInterval), on: loop
        ) { [self] in
            assumeIsolated { $0.tick(generation) }
        }
    }

    /// A heartbeat tick: the monitor decides between nothing, a Ping, and declaring the link dead.
    func tick(_ generation: UInt64) {
        guard let link, link.generation == generation, link.end == nil else { return }
        let action =
            machine.links.heartbeatTick(generation, received: link.receivedSinceTick, sent: link.sentSinceTick)
            ?? .none
        link.receivedSinceTick = false
        link.sentSinceTick = false
        switch action {
        case .declareDead:
            declareDead(link, "nothing received for two heartbeat intervals")
            return
        case .sendPing:
            sendPing(on: link)
        case .none:
            break
        }
        scheduleTick(link)
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

    func declareDead(_ link: Link, _ reason: String) {
        machine.stats.deadLinks += 1
        log(.warning, "link to \(link.endpoint) is dead: \(reason)")
        close(link, .immediately, error: LongLinkError(code: .connectionLost, message: reason))
    }

    /// Pings now and replaces the link if nothing comes back within the probe timeout.
    func probeLiveness() {
        guard let link, machine.links.isEstablished(link.generation), link.end == nil, link.probe == nil else { return }
        link.receivedSinceProbe = false
        sendPing(on: link)
        let generation = link.generation
        link.probe = clock.schedule(at: clock.now.advanced(by: configuration.livenessProbeTimeout), on: loop) {
            [self] in
            assumeIsolated { core in
                guard let link = core.link, link.generation == generation else { return }
                link.probe = nil
                if !link.receivedSinceProbe, link.end == nil {
                    core.declareDead(link, "no answer to a liveness probe")
                }
            }
        }
    }

    // MARK: App lifecycle and network

    func networkDidChange() {
        machine.supervision.changes.network += 1
        pendingWakeOrResume(.networkChanged)
        // Connected: the supervisor asks the provider again and re-probes.
        link?.resumeEndWaiter(.reprobe)
        probeLiveness()
    }

    func setBackground(_ background: Bool) {
        guard machine.supervision.inBackground != background else { return }
        machine.supervision.inBackground = background
        if !background {
            pendingWakeOrResume(.networkChanged)
            probeLiveness()
        }
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
                timers.retry = clock.schedule(at: clock.now.advanced(by: delay), on: loop) { [self] in
                    assumeIsolated { $0.wakeRetry(.timer) }
                }
            }
        }
    }

    func pendingWakeOrResume(_ wake: RetryWake) {
        if waiters.retry != nil {
            wakeRetry(wake)
        } else if wake != .timer {
            machine.supervision.pendingWake = wake
        }
    }

    func wakeRetry(_ wake: RetryWake) {
        timers.retry?.cancel()
        timers.retry = nil
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
        machine.supervision.changes.list += 1
        if let link, link.end == nil {
            link.resumeEndWaiter(.reprobe)
        } else {
            pendingWakeOrResume(.networkChanged)
        }
    }
}
