internal import LongLinkTransport
internal import LongLinkWire

/// Pushes: the principal binding, `Sync` and `Ack`, the send window's timer, and best-effort
/// pushes (the reliable push pump and the store calls are in `ServerConnection+PushStore.swift`).
extension ServerConnection {
    /// Binds the connection to a principal (any thread; on the loop at once when called there, so
    /// that a login reply cannot overtake its binding).
    ///
    /// `exclusive`: the principal's sessions of other clients end, here and on every server of a
    /// fleet (see ``ServerCore/sessionStarted(principal:clientID:)``).
    func bind(principal: String, exclusive: Bool = false) {
        onLoop { [self] in
            if case .rebind(let old) = session.bound(principal: principal) {
                boundAt = .now
                // Requests from now on are de-duplicated under the principal (see ``DedupeKey``).
                dedupeClient = DedupeKey.Client(session.clientID, principal: principal)
                core.rebind(self, from: old, to: principal)
                pushWindow.principalChanged()
                acks.principalChanged()
                syncGate.principalChanged()
                syncTimer?.cancel()
                syncTimer = nil
            }
            if exclusive, PrincipalKey.same(session.principal, principal) {
                boundAt = .now
                core.sessionStarted(principal: principal, clientID: session.clientID)
            }
        }
    }

    /// Ends this session with `GoAway(UNAUTHENTICATED, reconnect: false)` if it is bound to
    /// `principal` for a client other than `clientID` (any thread).
    ///
    /// `boundBefore`: only if the session was bound before that instant (a session record's login).
    func endSession(
        of principal: String, unlessClient clientID: String, boundBefore: ContinuousClock.Instant? = nil
    ) {
        onLoop { [self] in
            // Client ids by their bytes, as principals (see ``DedupeKey``): an equivalent spelling
            // of the client id is another client.
            guard PrincipalKey.same(session.principal, principal), !PrincipalKey.same(session.clientID, clientID),
                session.phase == .active
            else { return }
            if let boundBefore, let boundAt, boundAt >= boundBefore { return }
            core.counters.sessionsReplaced.increment()
            goAway(code: .unauthenticated, reason: "logged in elsewhere", reconnect: false, retryAfter: .zero)
        }
    }

    /// A `Sync` replays the unacknowledged pushes through the ``SyncGate``: at once, or coalesced
    /// with the others into one replay when the running one has caught up and
    /// ``ServerConfiguration/syncReplayInterval`` has passed since it began.
    func handleSync() {
        switch session.receivedSync() {
        case .resendReliablePushes:
            perform(syncGate.syncReceived(at: core.clock.now))
        case .closeConnection(let close):
            perform(close)
        case .ignore:
            break
        }
    }

    /// Performs what the ``SyncGate`` decided (a replay now pumps at once).
    func perform(_ action: SyncGate.Action) {
        switch action {
        case .replay:
            pushWindow.restart()
            pumpReliablePushes()
        case .armTimer(let deadline):
            syncTimer = core.clock.schedule(at: deadline, on: loop) { [self] in
                syncTimer = nil
                guard session.phase == .active || session.phase == .draining else { return }
                perform(syncGate.timerFired(at: core.clock.now))
            }
        case .none:
            break
        }
    }

    func handleAck(_ ack: Frame.Ack) {
        switch session.receivedAck(seqs: ack.seqs) {
        case .acknowledge(let principal, let seqs):
            core.counters.acksReceived.increment(by: seqs.count)
            // Repeats, seqs not sent here and acks of another epoch cost the store nothing; the
            // rest merge while a store call is in flight.
            let (current, call) = acks.received(seqs, epoch: ack.epoch)
            guard current else { return }
            if let call { acknowledge(call, principal: principal) }
            if pushWindow.acknowledged(seqs) { pumpReliablePushes() }
        case .closeConnection(let close):
            perform(close)
        case .ignore:
            break
        }
    }

    /// Arms the timer that opens a full window again when no `Ack` frees room in time: a client may
    /// hold pushes unacknowledged for as long as it likes (LongLink's client holds those of a
    /// topic nobody reads yet), and were they to fill the window, pushes of every other topic
    /// would wait behind them forever.
    func armWindowTimer() {
        guard windowTimer == nil else { return }
        pushWindow.timerArmed()
        windowTimer = schedule(after: configuration.reliablePushWindowTimeout) { [self] in
            windowTimer = nil
            guard session.phase == .active || session.phase == .draining else { return }
            switch pushWindow.timerFired() {
            case .none:
                break
            case .rearm:
                armWindowTimer()
            case .reopen:
                core.counters.pushWindowsReopened.increment()
                pumpReliablePushes()
            }
        }
    }

    /// Sends a best-effort push if the session is established, still bound to `principal` (nil:
    /// to any session, as ``LongLinkServer/broadcast(topic:payload:)`` sends) and the connection
    /// writable (any thread).
    ///
    /// The principal is checked on the loop: the caller picked this connection from the
    /// principal's table, and a login may have bound it to someone else before the hop.
    func sendBestEffort(topic: String, payload: [UInt8], for principal: String?) {
        // On the loop (a producer there, as a feed usually is) it costs no job per push.
        guard loop.inEventLoop else {
            loop.execute { [self] in sendBestEffortOnLoop(topic: topic, payload: payload, for: principal) }
            return
        }
        sendBestEffortOnLoop(topic: topic, payload: payload, for: principal)
    }

    private func sendBestEffortOnLoop(topic: String, payload: [UInt8], for principal: String?) {
        guard session.phase == .active else { return }
        if let principal, !PrincipalKey.same(session.principal, principal) { return }
        if connection.isWritable {
            send(.push(outgoing(Frame.Push(seq: 0, topic: topic, payload: payload))))
            core.counters.bestEffortPushesSent.increment()
        } else {
            core.counters.bestEffortPushesDropped.increment()
        }
    }
}
