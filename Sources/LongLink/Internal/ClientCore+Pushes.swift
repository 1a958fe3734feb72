internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    /// A new consumer's buffer, registered with the core in a job on the loop (so pushes that
    /// arrive after this returns reach it).
    nonisolated func makeSubscriber(topic: String?) -> PushSubscriber {
        let id = nextSubscriberID.add(1, ordering: .relaxed).newValue
        let subscriber = PushSubscriber(id: id, topic: topic, limit: configuration.pushBufferLimit) {
            [weak self] subscriber in
            self?.onLoop { $0.collectTaken(from: subscriber) }
        }
        onLoop { $0.addSubscriber(subscriber) }
        return subscriber
    }

    /// Registers a consumer; pushes held while nobody listened move to it.
    func addSubscriber(_ subscriber: PushSubscriber) {
        if machine.terminalError != nil || (machine.shuttingDown && link == nil) || subscriber.isFinished {
            subscriber.finish(reason: stopReason)
            return
        }
        subscribers[subscriber.id] = subscriber
        let added = pushes.consumerAdded(subscriber.id, topic: subscriber.topic)
        for push in added.pushes {
            let accepted = subscriber.offer(push)
            _ = pushes.offered(push, accepted: accepted ? 1 : 0, refused: !accepted)
        }
        if added.sync { requestSync() }
    }

    /// The consumer is gone (its task was cancelled, or its stream released): pushes it never took
    /// go back to the server's care, and a `Sync` brings them to whoever wants them.
    func removeSubscriber(_ id: UInt64) {
        guard let subscriber = subscribers.removeValue(forKey: id) else { return }
        collectTaken(from: subscriber)
        let removed = pushes.consumerRemoved(id, untaken: subscriber.finish())
        for seq in removed.ack { addAck(seq) }
        if removed.sync { requestSync() }
    }

    func handlePush(_ frame: Frame.Push) {
        stats.pushesReceived += 1
        let push = Push(seq: frame.seq, topic: frame.topic, payload: frame.payload)
        switch pushes.received(push) {
        case .offer:
            var accepted = 0
            var refused = false
            for subscriber in subscribers.values where PushDelivery.consumer(wanting: subscriber.topic, takes: push) {
                if subscriber.offer(push) { accepted += 1 } else if !subscriber.isFinished { refused = true }
            }
            if !push.isReliable {
                if accepted == 0 { stats.bestEffortPushesDropped += 1 }
            } else if accepted == 0 {
                stats.reliablePushesDeferred += 1
            }
            if pushes.offered(push, accepted: accepted, refused: refused) {
                log(.warning, "push consumer behind: deferring reliable pushes until it catches up")
            }
        case .held:
            break
        case .ackAgain:
            // The app has it; the earlier Ack was lost. Acknowledge again, deliver nothing.
            stats.duplicatePushesDropped += 1
            addAck(push.seq)
        case .dropDuplicate:
            stats.duplicatePushesDropped += 1
        case .dropDeferred:
            stats.reliablePushesDeferred += 1
        case .dropUnwanted:
            stats.bestEffortPushesDropped += 1
        }
    }

    func collectTaken(from subscriber: PushSubscriber) {
        let seqs = subscriber.drainTaken()
        stats.pushesDelivered += seqs.count
        let caughtUp = pushes.deferring && subscribers.values.allSatisfy { $0.count < $0.limit / 2 }
        let action = pushes.taken(seqs, caughtUp: caughtUp)
        for seq in action.ack { addAck(seq) }
        if action.sync { requestSync() }
    }

    /// Asks the server to send every unacknowledged push again (now, or once logged in).
    func requestSync() {
        guard let link = syncedLink else {
            pushes.wantSync()
            return
        }
        pushes.syncSent()
        send(.sync(Frame.Sync()), on: link)
    }

    func addAck(_ seq: UInt64) {
        switch acks.add(seq) {
        case .none:
            break
        case .armTimer:
            ackTimer = clock.schedule(at: clock.now.advanced(by: configuration.ackDelay), on: loop) { [self] in
                assumeIsolated { core in
                    core.ackTimer = nil
                    let seqs = core.acks.take()
                    if !seqs.isEmpty { core.sendAck(seqs) }
                }
            }
        case .flush(let seqs):
            ackTimer?.cancel()
            ackTimer = nil
            sendAck(seqs)
        }
    }

    func sendAck(_ seqs: [UInt64]) {
        guard let link = syncedLink else {
            // No logged-in link: keep them for the next one.
            for seq in seqs { _ = acks.add(seq) }
            return
        }
        send(.ack(Frame.Ack(seqs: seqs)), on: link)
        stats.acksSent += seqs.count
    }

    /// Ends every consumer's stream with `reason`: why the client stopped.
    func finishConsumers(_ reason: LongLinkError) {
        for subscriber in subscribers.values { subscriber.finish(reason: reason) }
        subscribers.removeAll()
        pushes.removeAll()
    }
}
