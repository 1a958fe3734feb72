internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    /// A new consumer's buffer, registered with the core in a job on the loop (so pushes that
    /// arrive after this returns reach it).
    nonisolated func makeSubscriber(
        filter: TopicFilter, conflation: PushConflation? = nil, acknowledgement: PushAcknowledgement = .atHandOver
    ) -> PushSubscriber {
        let id = shared.nextSubscriberID.add(1, ordering: .relaxed).newValue
        let subscriber = PushSubscriber(
            id: id, filter: filter, limit: configuration.pushBufferLimit, byteLimit: configuration.pushBufferBytes,
            unacknowledgedLimit: acknowledgement == .afterProcessing ? configuration.unacknowledgedPushLimit : nil,
            unacknowledgedByteLimit: configuration.unacknowledgedPushBytes,
            conflationKey: (conflation ?? configuration.pushConflation).key
        ) {
            [weak self] subscriber in
            self?.onLoop { $0.collectTaken(from: subscriber) }
        }
        let session = self.session
        onLoop { $0.addSubscriber(subscriber, session: session) }
        return subscriber
    }

    /// Registers a consumer made in `session`; pushes held while nobody listened move to it. One
    /// made in a session that ended since ends at once with that end: it was the last user's.
    func addSubscriber(_ subscriber: PushSubscriber, session: UInt64) {
        let admission = machine.addConsumer(
            subscriber, id: subscriber.id, filter: subscriber.filter, madeIn: session,
            session: shared.session.load(ordering: .relaxed), hasLink: link != nil)
        switch admission {
        case .endedSession: subscriber.finish(reason: endedSessionError)
        case .stopping: subscriber.finish(reason: stopReason)
        case .added(let actions): run(actions)
        }
    }

    /// The consumer is gone (its task was cancelled, or its stream released): pushes it never took
    /// go back to the server's care, and a `Sync` brings them to whoever wants them.
    func removeSubscriber(_ id: UInt64) {
        guard let subscriber = machine.removeConsumer(id) else { return }
        collectTaken(from: subscriber)
        run(machine.consumerLeft(untaken: subscriber.finish()))
    }

    /// A typed stream let a push go without handing it over (see ``PushLedger/released(_:)``).
    func releasePush(_ push: Push) {
        run(machine.released(push))
    }

    /// Wakes the consumers that pushes of the read just handled were buffered for.
    func wakeConsumers() {
        guard !machine.consumersToWake.isEmpty else { return }
        let consumers = machine.consumersToWake
        machine.consumersToWake.removeAll(keepingCapacity: true)
        for consumer in consumers { consumer.wakeWaiters() }
    }

    func collectTaken(from subscriber: PushSubscriber) {
        run(machine.consumerTook(subscriber.drainTaken()))
    }

    /// Asks the server to send every unacknowledged push again (now, or once logged in).
    func requestSync() {
        run(machine.wantSync())
    }

    /// Performs one decision of the ledger (through ``run(_:)``).
    func perform(_ action: PushLedger<PushSubscriber>.Action) {
        switch action {
        case .ack(let generation, let epoch, let seqs):
            guard let link = link(generation) else {
                machine.ackBlocked(epoch: epoch, seqs: seqs)
                return
            }
            sendAcks(seqs, epoch: epoch, on: link)
        case .armAckTimer:
            schedule(.ack, at: clock.now.advanced(by: configuration.ackDelay))
        case .cancelAckTimer:
            cancelTimer(.ack)
        case .sync(let generation):
            guard let link = link(generation) else { return }
            resync(on: link)
        }
    }

    /// Sends `Sync` on a link already synced, and a `Ping` after it.
    ///
    /// Pushes the server wrote before it reads this `Sync` still arrive ahead of the redelivery:
    /// the ledger drops them until it begins (see ``PushLedger/RedeliveryWait``). The `Ping` after
    /// the `Sync` marks the end of those pushes: the server answers it only after it read the `Sync`.
    private func resync(on link: Link) {
        send(.sync(Frame.Sync()), on: link)
        // Not `sendPing`: the heartbeat's round-trip measurement keeps its own Ping.
        let nonce = Self.randomNonce()
        send(.ping(Frame.Ping(nonce: nonce)), on: link)
        machine.resyncSent(on: link.generation, barrier: nonce)
    }

    /// Sends `seqs` of `epoch` as `Ack`s of at most Frame.maxAckSeqs (servers refuse larger ones),
    /// each naming the epoch, so that a server that numbers anew meanwhile ignores them. A link
    /// whose write buffer is full (a server flooding pushes without reading) takes none: the
    /// ledger keeps them until it reads again.
    private func sendAcks(_ seqs: [UInt64], epoch: UInt64, on link: Link) {
        guard link.connection.isWritable else {
            machine.ackBlocked(epoch: epoch, seqs: seqs)
            return
        }
        for start in stride(from: 0, to: seqs.count, by: Frame.maxAckSeqs) {
            let part = Array(seqs[start..<min(start + Frame.maxAckSeqs, seqs.count)])
            send(.ack(Frame.Ack(seqs: part, epoch: epoch)), on: link)
        }
        machine.stats.acksSent += seqs.count
    }

    /// Ends every consumer's stream with `reason` (why the session ended or the client stopped),
    /// and starts the ledger again as new (see ``PushLedger/removeAll()``).
    func finishConsumers(_ reason: LongLinkError) {
        for subscriber in machine.removeAllConsumers() { subscriber.finish(reason: reason) }
        cancelTimer(.ack)
    }
}
