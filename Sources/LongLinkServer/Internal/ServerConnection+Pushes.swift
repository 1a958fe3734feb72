internal import LongLinkTransport
internal import LongLinkWire

/// Pushes: the principal binding, `Sync` and `Ack`, the reliable push pump and its send window,
/// and best-effort pushes.
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
            guard PrincipalKey.same(session.principal, principal), session.clientID != clientID,
                session.phase == .active
            else { return }
            if let boundBefore, let boundAt, boundAt >= boundBefore { return }
            core.counters.sessionsReplaced.increment()
            goAway(code: .unauthenticated, reason: "logged in elsewhere", reconnect: false, retryAfter: .zero)
        }
    }

    func handleSync() {
        switch session.receivedSync() {
        case .resendReliablePushes:
            pushWindow.restart()
            pumpReliablePushes()
        case .closeConnection(let close):
            perform(close)
        case .ignore:
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

    /// Deletes acknowledged pushes from the store: at once in the server's own store, in the
    /// background in a fleet's, where the next call leaves only when this one returned.
    func acknowledge(_ call: AckMerger.Call, principal: String) {
        if let shared = core.fleet?.pushes {
            acknowledgeShared(shared, principal: principal, call: call)
            return
        }
        var next: AckMerger.Call? = call
        while let call = next {
            core.store.acknowledge(principal: principal, seqs: call.seqs)
            next = acks.callReturned(succeeded: true)
        }
    }

    /// Asks the loop to send newly stored reliable pushes (any thread; coalesced).
    func requestPush() {
        guard !pushRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in pumpReliablePushes() }
    }

    /// Sends stored pushes after the last one sent, in seq order, while the connection is writable
    /// and the send window has room.
    func pumpReliablePushes() {
        pushRequested.store(false, ordering: .releasing)
        if let shared = core.fleet?.pushes {
            pumpShared(shared)
            return
        }
        guard let principal = session.reliablePushPrincipal else { return }
        pushWindow.pumpStarted()
        while connection.isWritable {
            let room = pushWindow.room
            guard room > 0 else {
                pushWindow.filled()
                armWindowTimer()
                break
            }
            let batch = core.store.unacknowledged(
                principal: principal, after: pushWindow.lastSentSeq, limit: min(256, room))
            guard let last = batch.last else { break }
            for push in batch {
                send(
                    .push(
                        outgoing(Frame.Push(seq: push.seq, topic: push.topic, payload: push.payload, epoch: push.epoch))
                    ))
            }
            core.counters.reliablePushesSent.increment(by: batch.count)
            pushWindow.sent(count: batch.count, lastSeq: last.seq)
            acks.sent(first: batch[0].seq, last: last.seq, epoch: last.epoch)
        }
    }

    /// Arms the timer that opens a full window again when no `Ack` frees room in time: a client may
    /// hold pushes unacknowledged for as long as it likes (LongLink's client holds those of a
    /// topic nobody reads yet), and were they to fill the window, pushes of every other topic
    /// would wait behind them forever.
    func armWindowTimer() {
        guard windowTimer == nil else { return }
        pushWindow.timerArmed()
        windowTimer = loop.scheduleTimer(after: configuration.reliablePushWindowTimeout) { [self] in
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

    /// Sends a best-effort push if the session is established and the connection writable (any
    /// thread).
    func sendBestEffort(topic: String, payload: [UInt8]) {
        onLoop { [self] in
            guard session.phase == .active else { return }
            if connection.isWritable {
                send(.push(outgoing(Frame.Push(seq: 0, topic: topic, payload: payload))))
                core.counters.bestEffortPushesSent.increment()
            } else {
                core.counters.bestEffortPushesDropped.increment()
            }
        }
    }
}
