internal import LongLinkTransport
internal import LongLinkWire

/// Where a connection's reads of its push store stand (loop-confined).
struct PushReads {
    /// A read is on its way to a store a round trip away: pumps wait for it (one read at a time
    /// keeps seqs in order).
    var inFlight = false
    /// A pump was asked for while the read was on its way: pump again when it returns.
    var again = false
    /// The principal whose observation the store confirmed for this connection: a `Sync` reads only
    /// once notices of its principal reach this server, so that nothing stored between the read
    /// and the subscription is missed.
    var observed: String?
    /// Armed after a failed read (by the server's clock): the store is asked again when it fires.
    var retryTimer: (any ScheduledWork)?
    /// Reads failed in a row: the wait before the next grows with them (see ``ServerConnection/readRetry``).
    var failures = 0
}

/// One read of the push store, begun in the window's `generation`.
struct PumpRead {
    let read: PushRead
    let generation: UInt64

    var principal: String { read.principal }
}

/// The reliable push pump and the acknowledgements, through the one store interface
/// (``PushStore``): a store that answers at once (``ServerCore/immediatePushes``) is called
/// on the loop, any other in a task whose result comes back to the loop; what the store answers is
/// handled by the same code either way.
extension ServerConnection {
    /// How long after a failed read of the push store the connection tries again, at most (after
    /// a failure that does not pass, always).
    static let pushReadRetry = Duration.seconds(1)

    /// The waits between reads of a store that is away for a while (a failover): from 50 ms,
    /// doubling up to ``pushReadRetry``, so that a `Sync` is answered soon after the store is back.
    /// Reads have no deadline: they go on until the connection ends.
    static let readRetry = StoreRetry(initial: .milliseconds(50), maximum: pushReadRetry)

    /// Asks the loop to send newly stored reliable pushes (any thread; coalesced).
    func requestPush() {
        guard !pushRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in pumpReliablePushes() }
    }

    /// Sends stored pushes after the last one sent, in seq order, while the connection is writable
    /// and the send window has room.
    func pumpReliablePushes() {
        pushRequested.store(false, ordering: .releasing)
        guard let principal = session.reliablePushPrincipal else { return }
        guard !pushReads.inFlight else {
            pushReads.again = true
            return
        }
        pushReads.again = false
        pushWindow.pumpStarted()
        while connection.isWritable {
            let room = pushWindow.room
            guard room > 0 else {
                pushWindow.filled()
                armWindowTimer()
                return
            }
            let read = PumpRead(
                read: PushRead(principal: principal, after: pushWindow.lastSentSeq, limit: min(256, room)),
                generation: pushWindow.generation)
            guard let store = core.immediatePushes else {
                readInBackground(read)
                return
            }
            let batch = store.unacknowledgedAtOnce(read.read)
            guard readReturned(.success(batch), read) else { return }
        }
    }

    /// Reads from a store a round trip away; the pushes are sent when they arrive (on the loop).
    private func readInBackground(_ read: PumpRead) {
        pushReads.inFlight = true
        let store = core.pushes
        let observe = !PrincipalKey.same(pushReads.observed, read.principal)
        Task { [self] in
            if observe { await store.refreshObservation(of: read.principal) }
            let result: Result<[StoredPush], LongLinkError>
            do throws(LongLinkError) {
                result = .success(
                    try await store.unacknowledged(read.read))
            } catch {
                result = .failure(error)
            }
            onLoop { [self] in
                pushReads.inFlight = false
                guard session.phase == .active || session.phase == .draining else { return }
                if observe { pushReads.observed = read.principal }
                if readReturned(result, read) || pushReads.again { pumpReliablePushes() }
            }
        }
    }

    /// Sends what a read found. Returns whether the pump should read again at once: the store may
    /// hold more, or the read is stale.
    private func readReturned(_ result: Result<[StoredPush], LongLinkError>, _ read: PumpRead) -> Bool {
        // A Sync or a new login since the read began: what it found may be behind; read again.
        guard read.generation == pushWindow.generation,
            PrincipalKey.same(read.principal, session.reliablePushPrincipal)
        else { return true }
        switch result {
        case .failure(let error):
            core.counters.sharedStoreFailures.increment()
            guard pushReads.retryTimer == nil else { return false }
            pushReads.failures += 1
            let transient = StoreRetry.isTransient(error)
            let wait =
                transient
                ? Self.readRetry.backoff(afterFailures: pushReads.failures, jitter: .random(in: 0.5...1))
                : Self.pushReadRetry
            pushReads.retryTimer = schedule(after: wait) { [self] in
                pushReads.retryTimer = nil
                if transient { core.counters.storeCallsRetried.increment() }
                pumpReliablePushes()
            }
            return false
        case .success(let batch):
            pushReads.failures = 0
            // The store numbers anew in a new epoch after it lost the principal (Redis restarted
            // empty, or a store in memory forgot a principal with nothing left): seqs may start
            // below the last one sent, so read from the start again.
            if let epoch = pushWindow.lastSentEpoch, let first = batch.first, first.epoch != epoch {
                pushWindow.restart()
                syncGate.replayStarted(at: core.clock.now)
                return true
            }
            sendStored(batch)
            if batch.count == read.read.limit { return true }
            // Caught up with the store: a Sync coalesced meanwhile may replay now.
            switch syncGate.replayCaughtUp(at: core.clock.now) {
            case .replay:
                pushWindow.restart()
                return true
            case let action:
                perform(action)
                return false
            }
        }
    }

    /// Sends the pushes of `batch` after the last one sent, and tells the window and the ack
    /// bookkeeping once per run of one epoch rather than once per push.
    private func sendStored(_ batch: [StoredPush]) {
        var lastSeq = pushWindow.lastSentSeq
        var run: (first: UInt64, last: UInt64, epoch: UInt64, count: Int)?
        var count = 0
        for push in batch where push.seq > lastSeq {
            send(
                .push(outgoing(Frame.Push(seq: push.seq, topic: push.topic, payload: push.payload, epoch: push.epoch))))
            lastSeq = push.seq
            count += 1
            if let current = run, current.epoch == push.epoch {
                run = (current.first, push.seq, current.epoch, current.count + 1)
                continue
            }
            if let run { sent(run) }
            run = (push.seq, push.seq, push.epoch, 1)
        }
        if let run { sent(run) }
        if count > 0 { syncGate.pushesSent() }
        core.counters.reliablePushesSent.increment(by: count)
    }

    private func sent(_ run: (first: UInt64, last: UInt64, epoch: UInt64, count: Int)) {
        pushWindow.sent(count: run.count, lastSeq: run.last, epoch: run.epoch)
        acks.sent(first: run.first, last: run.last, epoch: run.epoch)
    }

    /// Reads the principal's pushes again from the first unacknowledged one, as after a `Sync`
    /// (any thread): the client drops what it has seen, by epoch and seq.
    func rereadPushes() {
        onLoop { [self] in
            guard session.reliablePushPrincipal != nil else { return }
            pushWindow.restart()
            syncGate.replayStarted(at: core.clock.now)
            pumpReliablePushes()
        }
    }

    /// Deletes acknowledged pushes from the store; acks that arrive while a call is in flight (to a
    /// store a round trip away) wait in ``acks`` and leave in one call when it returns. A call that
    /// fails for a reason that passes is made again with backoff; one that still fails leaves them
    /// stored: they are sent again after the next `Sync`, and the client drops what it has seen.
    func acknowledge(_ call: AckMerger.Call, principal: String) {
        guard let store = core.immediatePushes else {
            acknowledgeInBackground(call, principal: principal)
            return
        }
        var next: AckMerger.Call? = call
        while let call = next {
            store.acknowledgeAtOnce(AcknowledgedPushes(principal: principal, seqs: call.seqs, epoch: call.epoch))
            next = acks.callReturned(succeeded: true)
        }
    }

    /// A deletion that fails for a reason that passes is made again (it deletes the same seqs,
    /// whatever an attempt whose reply was lost did) within the retries' patience.
    private func acknowledgeInBackground(_ call: AckMerger.Call, principal: String) {
        let store = core.pushes
        let core = self.core
        Task { [self] in
            let succeeded: Bool
            let (retry, timing) = core.storeRetry.withLock { ($0.policy, $0.timing) }
            do throws(StoreRetry.Failure) {
                try await retry.call(
                    until: timing.now().advanced(by: retry.patience), timing: timing,
                    retrying: { core.counters.storeCallsRetried.increment() }
                ) { () async throws(LongLinkError) in
                    try await store.acknowledge(
                        AcknowledgedPushes(principal: principal, seqs: call.seqs, epoch: call.epoch))
                }
                succeeded = true
            } catch {
                succeeded = false
                core.counters.sharedStoreFailures.increment()
            }
            onLoop { [self] in
                // Acks still waiting belong to the principal bound now (a new binding forgets them).
                guard let next = acks.callReturned(succeeded: succeeded), let principal = session.principal else {
                    return
                }
                acknowledgeInBackground(next, principal: principal)
            }
        }
    }
}
