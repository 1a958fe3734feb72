internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    /// Takes a connection that got its `Welcome` (the connect race's winner) as the current link.
    func attach(_ pending: PendingLink) throws(LongLinkError) -> UInt64 {
        let generation = machine.links.newGeneration()
        if case .refuse(let error) = machine.attach(generation) {
            // A shutdown (or terminal error) landed while the supervisor was connecting: this link
            // must not come up, or nothing would ever close it.
            pending.connection.close(.immediately, error: error)
            throw error
        }
        let link = Link(
            generation: generation, connection: pending.connection, endpoint: pending.endpoint,
            session: shared.session.load(ordering: .relaxed))
        forgetEndedLink()
        links[generation] = link
        guard let handOver = pending.assumeIsolated({ $0.handOver(to: self, generation: generation) }) else {
            let error = LongLinkError(code: .connectionLost, message: "the link dropped before login")
            // Nothing was written on it: the machine forgets it, no request is settled.
            machine.linkAbandoned(generation, error: error)
            links[generation] = nil
            throw error
        }
        let welcome = handOver.welcome
        let handled = machine.received(.welcome(welcome), on: generation, now: clock.now, inflate: inflater(for: link))
        run(handled.actions)
        guard handled.keepReading else {
            throw machine.end(of: generation)?.error
                ?? LongLinkError(code: .protocolViolation, message: "the server's Welcome was refused")
        }
        machine.stats.connects += 1
        if machine.stats.connects > 1 { machine.stats.reconnects += 1 }
        let proposed = proposedHeartbeat
        link.adopt(welcome, proposedHeartbeat: proposed, offeredCompression: configuration.compression.isEnabled)
        adoptedHeartbeat(link, proposed: proposed)
        shared.linkCompresses.store(link.compresses, ordering: .relaxed)
        scheduleTick(link)
        // What came right after Welcome (a GoAway, say): the supervisor sees its effect when it
        // waits on the link.
        if !handOver.held.isEmpty { linkReceived(generation, handOver.held) }
        if let closed = handOver.closed { linkClosed(generation, closed) }
        return generation
    }

    /// The `Hello` every link starts with (with the compression offer, when configured).
    nonisolated var hello: Frame.Hello { Self.hello(for: configuration) }

    /// The `Hello` of the next link: with the learned interval when the heartbeat adapts.
    var currentHello: Frame.Hello { Self.hello(for: configuration, heartbeat: proposedHeartbeat) }

    /// The `Hello` of a client of `configuration`: its id, heartbeat and metadata, with the
    /// compression offer when compression is on (probes send it too, marked as probes).
    static func hello(for configuration: ClientConfiguration, heartbeat: Duration? = nil) -> Frame.Hello {
        var metadata = configuration.metadata
        if configuration.compression.isEnabled {
            metadata[PayloadCompressor.metadataKey] = PayloadCompressor.zlibName
        }
        return Frame.Hello(
            clientID: configuration.clientID,
            heartbeatMilliseconds: (heartbeat ?? configuration.heartbeat).wireMilliseconds,
            metadata: metadata)
    }

    var welcome: Frame.Welcome? { link?.welcome }

    /// The current link's server, as the login step sees it.
    var serverInfo: ServerInfo? {
        guard let link, let welcome = link.welcome else { return nil }
        return ServerInfo(welcome, heartbeat: link.heartbeat, maxFrameBytes: link.maxFrameBytes)
    }

    /// Login is done: send `Sync`, the acknowledgements that waited, the queue, and the
    /// subscriptions made meanwhile (``ClientStateMachine/openGate(_:loggedIn:)``). `loggedIn`: the
    /// session's login step ran here (false when it has none; see
    /// ``LinkStateMachine/loginSucceeded(_:loggedIn:)``).
    func openGate(_ generation: UInt64, loggedIn: Bool) {
        guard link(generation) != nil, let actions = machine.openGate(generation, loggedIn: loggedIn) else { return }
        run(actions)
    }

    /// Suspends until the link ends, or until `wakeAt` (to re-probe), or until the server reports a
    /// load at which the client leaves it, or the network or the endpoint list changes. Returns at
    /// once with `reprobe` when they changed already since `seen`, what the supervisor last looked at.
    func waitForEnd(
        _ generation: UInt64, wakeAt: ContinuousClock.Instant? = nil, seen: ChangeCounters? = nil
    ) async -> LinkWait {
        await withCheckedContinuation { continuation in
            guard let link, link.generation == generation else {
                continuation.resume(returning: .ended(.closed(nil)))
                return
            }
            // Before the end: a server that went away (and closed) is left for another, not reconnected to.
            if let goAway = machine.takeGoingAway(generation) {
                continuation.resume(returning: .goingAway(goAway))
                return
            }
            if let end = machine.end(of: generation) {
                continuation.resume(returning: .ended(end))
                return
            }
            if let seen, seen != machine.supervision.changes {
                continuation.resume(returning: .reprobe)
                return
            }
            link.endWaiter = continuation
            if let wakeAt { schedule(.supervisorWake(generation), at: wakeAt) }
        }
    }

    /// Whether the client leaves a server reporting this load (only with somewhere else to go).
    func leavesAt(_ permille: Int) -> Bool {
        machine.leavesAt(permille)
    }

    /// Closes a link (from the supervisor, after a failed login for example).
    func closeLink(_ generation: UInt64, error: LongLinkError) {
        guard let link = link(generation) else { return }
        close(link, .immediately, error: error)
    }

    /// Closes `link` unless it is closing already; the transport then reports ``linkClosed(_:_:)``.
    func close(_ link: Link, _ mode: CloseMode, error: LongLinkError? = nil) {
        guard machine.links.closeRequested(link.generation) else { return }
        link.connection.close(mode, error: error)
    }

    /// The server read enough of what was written: acks and requests held back go out.
    func linkWritabilityChanged(_ generation: UInt64) {
        guard let link = link(generation), link.connection.isWritable else { return }
        run(machine.linkWritable(generation))
    }

    /// Handles the frames of one read, in order: the machine decides each
    /// (``ClientStateMachine/received(_:on:now:inflate:)``), then its actions run before the next.
    /// One method for every link: what differs by ``LinkStateMachine/Role`` (a `Pong` measures and
    /// reports load only on the current link, a `GoAway` drains or leaves) the machine decides.
    func linkReceived(_ generation: UInt64, _ frames: [Frame]) {
        guard let link = link(generation), let role = machine.links.role(of: generation) else { return }
        // A link of a session that ended, still closing: its pushes are the last user's.
        guard isCurrent(session: link.session) else { return }
        machine.read(on: generation)
        // The read's pushes reach waiting consumers in one wake each.
        defer { wakeConsumers() }
        let now = clock.now
        let inflate = inflater(for: link)
        for frame in frames {
            guard !machine.hasEnded(generation), machine.links.role(of: generation) == role else { return }
            if case .push(let push) = frame, configuration.responseCache.pushesInvalidate,
                !machine.links.awaitsWelcome(generation)
            {
                // Before any consumer can take it, so that what the push changed is not read stale.
                responseCache.invalidate(topic: push.topic)
            }
            let handled = machine.received(frame, on: generation, now: now, inflate: inflate)
            run(handled.actions)
            if case .pong(let pong) = frame, machine.links.role(of: generation) == .current {
                heartbeatPong(pong, on: link)
            }
            guard handled.keepReading else { return }
        }
    }

    /// The transport could not decode what the link read: the server broke the protocol.
    func linkViolated(_ generation: UInt64, _ failure: WireFormatError) {
        guard link(generation) != nil else { return }
        run(machine.malformed(generation, failure))
    }

    /// One method for every link that closes: its written requests are resent on the current link
    /// when that is safe, the others failed (``ClientStateMachine/linkClosed(_:error:serverWindow:)``);
    /// the supervisor's wait on the current link ends.
    func linkClosed(_ generation: UInt64, _ error: LongLinkError?) {
        guard let link = link(generation) else { return }
        heartbeatLinkLost(link, error: error)
        let serverWindow = (link.welcome?.dedupeWindowMilliseconds ?? 0) > 0
        let outcome = machine.linkClosed(generation, error: error, serverWindow: serverWindow)
        run(machine.stopLiveness(generation))
        let end = outcome.closed?.end ?? .closed(error)
        if outcome.closed?.role != .current { links[generation] = nil }
        machine.stats.resends += outcome.settlement.resent
        // Say why a server with a window did not spare the call: it was made before any login.
        let unknown = "the link dropped after the request was written; its outcome is unknown"
        let message = outcome.madeBeforeLogin ? unknown + " (made before a login: not de-duplicated)" : unknown
        fail(outcome.settlement.failed, with: LongLinkError(code: .connectionLost, message: message))
        if outcome.closed?.role == .current {
            endWait(link, .ended(end))
        } else if let current = outcome.drain {
            run(.drainQueue(current))
        }
        if machine.shutdownIsIdle { completeShutdown() }
    }
}
