internal import LongLinkTransport
internal import LongLinkWire

/// Where a connection's reads of a fleet's shared push store stand (loop-confined).
struct SharedReads {
    /// A read is on its way to the store: pumps wait for it (one read at a time keeps seqs in order).
    var inFlight = false
    /// A pump was asked for while the read was on its way: pump again when it returns.
    var again = false
    /// The principal whose observation the store confirmed for this connection: a `Sync` reads only
    /// once notices of its principal reach this server, so that nothing stored between the read
    /// and the subscription is missed.
    var observed: String?
    /// Armed after a failed read: the store is asked again when it fires.
    var retryTimer: EventLoopTimer?
}

/// A fleet: reliable pushes read from and acknowledged in the shared store, requests settled with
/// the shared de-duplication window.
extension ServerConnection {
    /// How long after a failed read of the shared push store the connection tries again.
    static let sharedReadRetry = Duration.seconds(1)

    /// The shared store's form of ``pumpReliablePushes()``: reads the next pushes after the last
    /// one sent, in the background, and sends them when they arrive (on the loop).
    func pumpShared(_ store: any SharedPushStore) {
        guard let principal = session.reliablePushPrincipal else { return }
        guard !sharedReads.inFlight else {
            sharedReads.again = true
            return
        }
        pushWindow.pumpStarted()
        guard connection.isWritable else { return }
        let room = pushWindow.room
        guard room > 0 else {
            pushWindow.filled()
            armWindowTimer()
            return
        }
        sharedReads.inFlight = true
        sharedReads.again = false
        let after = pushWindow.lastSentSeq
        let generation = pushWindow.generation
        let limit = min(256, room)
        let observe = !PrincipalKey.same(sharedReads.observed, principal)
        Task { [self] in
            if observe { await store.refreshObservation(of: principal) }
            let result: Result<[StoredPush], LongLinkError>
            do throws(LongLinkError) {
                result = .success(try await store.unacknowledged(principal: principal, after: after, limit: limit))
            } catch {
                result = .failure(error)
            }
            onLoop { [self] in
                sharedReadReturned(
                    result, principal: principal, generation: generation, limit: limit, observed: observe)
            }
        }
    }

    /// Reads the principal's pushes again from the first unacknowledged one, as after a `Sync`
    /// (any thread): the client drops what it has seen, by epoch and seq.
    func rereadShared() {
        onLoop { [self] in
            guard session.reliablePushPrincipal != nil else { return }
            pushWindow.restart()
            pumpReliablePushes()
        }
    }

    private func sharedReadReturned(
        _ result: Result<[StoredPush], LongLinkError>, principal: String, generation: UInt64, limit: Int,
        observed: Bool
    ) {
        sharedReads.inFlight = false
        guard session.phase == .active || session.phase == .draining, let store = core.fleet?.pushes else { return }
        if observed { sharedReads.observed = principal }
        // A Sync or a new login since the read began: what it found may be behind; read again.
        guard generation == pushWindow.generation, PrincipalKey.same(principal, session.reliablePushPrincipal) else {
            pumpShared(store)
            return
        }
        switch result {
        case .failure:
            core.counters.sharedStoreFailures.increment()
            guard sharedReads.retryTimer == nil else { return }
            sharedReads.retryTimer = loop.scheduleTimer(after: Self.sharedReadRetry) { [self] in
                sharedReads.retryTimer = nil
                pumpReliablePushes()
            }
        case .success(let batch):
            // The store numbers anew in a new epoch after it lost the principal (Redis restarted
            // empty): seqs may start below the last one sent, so read from the start again.
            if let epoch = pushWindow.lastSentEpoch, let first = batch.first, first.epoch != epoch {
                pushWindow.restart()
                pumpShared(store)
                return
            }
            var count = 0
            for push in batch where push.seq > pushWindow.lastSentSeq {
                send(
                    .push(
                        outgoing(Frame.Push(seq: push.seq, topic: push.topic, payload: push.payload, epoch: push.epoch))
                    ))
                count += 1
                pushWindow.sent(count: 1, lastSeq: push.seq, epoch: push.epoch)
                acks.sent(first: push.seq, last: push.seq, epoch: push.epoch)
            }
            core.counters.reliablePushesSent.increment(by: count)
            if batch.count == limit || sharedReads.again { pumpShared(store) }
        }
    }

    /// Deletes acknowledged pushes from the shared store, in the background; acks that arrive
    /// meanwhile wait in ``acks`` and leave in one call when this one returns. A failure leaves
    /// them stored: they are sent again after the next `Sync`, and the client drops what it has
    /// seen.
    func acknowledgeShared(_ store: any SharedPushStore, principal: String, call: AckMerger.Call) {
        let core = self.core
        Task { [self] in
            let succeeded: Bool
            do throws(LongLinkError) {
                try await store.acknowledge(principal: principal, seqs: call.seqs, epoch: call.epoch)
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
                acknowledgeShared(store, principal: principal, call: next)
            }
        }
    }

    /// Runs a request admitted by the local window under the shared window's rule: the handler
    /// runs only when the shared store gives this server the claim; otherwise the request waits
    /// for the server that has it and gets its stored reply. Always in a task (the shared window
    /// is a round trip away), with the request's deadline armed as for any handler.
    func executeShared(
        _ store: any SharedDedupeStore, route: Router.Route, payload: [UInt8], context: RequestContext,
        token: UInt64, run: DedupeRun, key: DedupeKey, timeout: Duration?, at now: ContinuousClock.Instant
    ) {
        let runningFor = (timeout ?? configuration.dedupeWindow) + ServerCore.sharedClaimMargin
        let deadline = now.advanced(by: timeout ?? runningFor)
        let requestID = context.requestID
        let limit = configuration.maxOutgoingFrameBytes
        let core = self.core
        core.counters.handlersRunning.increment()
        let executor: (any TaskExecutor)? = configuration.runsHandlersOnEventLoop ? loop : nil
        let task = Task(executorPreference: executor) { [self] in
            let (response, kept) = await core.sharedOutcome(
                store, key: key, method: context.method, runningFor: runningFor, deadline: deadline
            ) { () async -> Frame.Response? in
                switch route {
                case .synchronous(let handler):
                    return Self.response(requestID: requestID, limit: limit) { try handler(payload, context) }
                case .async(let handler):
                    do {
                        let reply = try await handler(payload, context)
                        return Self.fitted(Frame.Response(requestID: requestID, payload: reply), limit: limit)
                    } catch {
                        return Self.response(requestID: requestID, limit: limit) { throw error }
                    }
                }
            }
            core.counters.handlersRunning.increment(by: -1)
            core.executionFinished(
                origin: self, requestID: requestID, token: token, run: run, response: response, kept: kept)
        }
        var execution = Execution(task: task, timer: nil, run: run, dedupeKey: key)
        if let timeout {
            execution.timer = loop.scheduleTimer(after: timeout) { [self] in
                handlerTimedOut(requestID: requestID, token: token, run: run)
            }
        }
        session.track(requestID: requestID, token: token, execution: execution)
    }
}
