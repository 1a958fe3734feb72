internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    /// A new consumer's buffer, registered with the core in a job on the loop (so pushes that
    /// arrive after this returns reach it).
    nonisolated func makeSubscriber(topic: String?, conflation: PushConflation? = nil) -> PushSubscriber {
        let id = nextSubscriberID.add(1, ordering: .relaxed).newValue
        let subscriber = PushSubscriber(
            id: id, topic: topic, limit: configuration.pushBufferLimit, byteLimit: configuration.pushBufferBytes,
            conflationKey: (conflation ?? configuration.pushConflation).key
        ) {
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
            let accepted = subscriber.offer(push) != .refused
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
        for key in removed.ack { addAck(key) }
        if removed.sync { requestSync() }
    }

    /// A typed stream let a push go without handing it over (see ``PushDelivery/released(_:)``).
    func releasePush(_ push: Push) {
        if let key = pushes.released(push) { addAck(key) }
    }

    func handlePush(_ frame: Frame.Push, on link: Link) {
        stats.pushesReceived += 1
        var push = Push(seq: frame.seq, topic: frame.topic, payload: frame.payload, epoch: frame.epoch)
        if frame.compression != 0 {
            switch inflated(frame.payload, compression: frame.compression, on: link) {
            case .success(let payload): push.payload = payload
            case .failure(let error):
                push.payload = []
                push.payloadError = error as? LongLinkError
            }
        }
        if push.isReliable, link.pushEpoch != push.epoch {
            link.pushEpoch = push.epoch
            releaseAcksAwaitingEpoch(push.epoch)
        }
        if push.isReliable { link.lastPushSeq = push.seq }
        if configuration.responseCache.pushesInvalidate { responseCache.invalidate(topic: push.topic) }
        switch pushes.received(push, on: link.generation) {
        case .offer:
            var accepted = 0
            var refused = false
            for subscriber in subscribers.values where PushDelivery.consumer(wanting: subscriber.topic, takes: push) {
                switch subscriber.offer(push) {
                case .accepted: accepted += 1
                case .conflated:
                    accepted += 1
                    stats.bestEffortPushesConflated += 1
                case .refused: if !subscriber.isFinished { refused = true }
                }
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
            addAck(push.key)
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
        let caughtUp = pushes.deferring && subscribers.values.allSatisfy(\.isBelowHalf)
        let action = pushes.taken(seqs, caughtUp: caughtUp)
        for key in action.ack { addAck(key) }
        if action.sync { requestSync() }
    }

    /// Asks the server to send every unacknowledged push again (now, or once logged in).
    ///
    /// On a link already synced, pushes the server wrote before it reads this `Sync` still arrive
    /// ahead of the redelivery: ``PushDelivery`` drops them until it begins (see
    /// ``PushDelivery/RedeliveryWait``). The `Ping` after the `Sync` marks the end of those pushes:
    /// the server answers it only after it read the `Sync`.
    func requestSync() {
        guard let link = syncedLink else {
            pushes.wantSync()
            return
        }
        send(.sync(Frame.Sync()), on: link)
        // Not `sendPing`: the heartbeat's round-trip measurement keeps its own Ping.
        let nonce = Self.randomNonce()
        send(.ping(Frame.Ping(nonce: nonce)), on: link)
        pushes.resyncSent(on: link.generation, epoch: link.pushEpoch, lastSeq: link.lastPushSeq, barrier: nonce)
    }

    /// A `Pong` on the current link: it may end the wait for a redelivery.
    func pushBarrierPassed(_ nonce: UInt64) {
        if pushes.pongReceived(nonce) { requestSync() }
    }

    func addAck(_ key: PushKey) {
        switch acks.add(key) {
        case .none:
            break
        case .armTimer:
            ackTimer = clock.schedule(at: clock.now.advanced(by: configuration.ackDelay), on: loop) { [self] in
                assumeIsolated { core in
                    core.ackTimer = nil
                    let keys = core.acks.take()
                    if !keys.isEmpty { core.sendAck(keys) }
                }
            }
        case .flush(let keys):
            ackTimer?.cancel()
            ackTimer = nil
            sendAck(keys)
        }
    }

    /// Acknowledges on the current link what belongs to its seq space. Acks of an earlier link wait
    /// until this one's first reliable push tells its epoch (see ``releaseAcksAwaitingEpoch(_:)``).
    /// Acks also wait, bounded, while the link's write buffer is full (a server flooding pushes
    /// without reading), and go out when the server reads again.
    func sendAck(_ keys: [PushKey]) {
        var keys = keys
        if !retiring.isEmpty { keys = sendAcksOnRetiringLinks(keys) }
        guard let link = syncedLink, let epoch = link.pushEpoch, link.connection.isWritable else {
            acksAwaitingEpoch.append(contentsOf: keys)
            let excess = acksAwaitingEpoch.count - Self.acksAwaitingEpochLimit
            // Dropping an ack loses nothing: the server redelivers the push and it is acked again.
            if excess > 0 { acksAwaitingEpoch.removeFirst(excess) }
            return
        }
        let seqs = keys.compactMap { $0.epoch == epoch ? $0.seq : nil }
        stats.staleAcksDropped += keys.count - seqs.count
        sendAcks(seqs, epoch: epoch, on: link)
    }

    /// Sends `seqs` of `epoch` as `Ack`s of at most Frame.maxAckSeqs (servers refuse larger ones),
    /// each naming the epoch, so that a server that numbers anew meanwhile ignores them.
    private func sendAcks(_ seqs: [UInt64], epoch: UInt64, on link: Link) {
        for start in stride(from: 0, to: seqs.count, by: Frame.maxAckSeqs) {
            let part = Array(seqs[start..<min(start + Frame.maxAckSeqs, seqs.count)])
            send(.ack(Frame.Ack(seqs: part, epoch: epoch)), on: link)
        }
        stats.acksSent += seqs.count
    }

    /// Acknowledges on a retiring link (still open, answering) the pushes of its seq space when the
    /// current link's is another; returns the rest.
    private func sendAcksOnRetiringLinks(_ keys: [PushKey]) -> [PushKey] {
        let currentEpoch = syncedLink?.pushEpoch
        var rest: [PushKey] = []
        var byLink: [UInt64: [UInt64]] = [:]
        for key in keys {
            if key.epoch != currentEpoch,
                let old = retiring.values.first(where: { $0.end == nil && !$0.goingAway && $0.pushEpoch == key.epoch })
            {
                byLink[old.generation, default: []].append(key.seq)
            } else {
                rest.append(key)
            }
        }
        for (generation, seqs) in byLink {
            guard let old = retiring[generation], let epoch = old.pushEpoch else { continue }
            sendAcks(seqs, epoch: epoch, on: old)
        }
        return rest
    }

    /// The most acks kept waiting (for a link to tell its epoch, or to become writable).
    static let acksAwaitingEpochLimit = 65_536

    /// The link's seq space is now known: acks waiting for it go out with the next batch, and those
    /// of another seq space are dropped (their seqs mean other pushes there).
    func releaseAcksAwaitingEpoch(_ epoch: UInt64) {
        guard !acksAwaitingEpoch.isEmpty else { return }
        let waiting = acksAwaitingEpoch
        acksAwaitingEpoch = []
        for key in waiting {
            if key.epoch == epoch { addAck(key) } else { stats.staleAcksDropped += 1 }
        }
    }

    /// Ends every consumer's stream with `reason`: why the client stopped.
    func finishConsumers(_ reason: LongLinkError) {
        for subscriber in subscribers.values { subscriber.finish(reason: reason) }
        subscribers.removeAll()
        pushes.removeAll()
    }
}
