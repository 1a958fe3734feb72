/// The push consumers: a new one admitted (or refused) with the held pushes it takes, and what a
/// consumer handed to the app (acks, the end of deferring).
extension ClientStateMachine where Consumer: PushConsumer {
    /// Whether a new consumer may start.
    enum ConsumerAdmission {
        /// Registered; these actions follow (a `Sync` owed for pushes nobody could take).
        case added([Action])
        /// Made in a session that ended since: it ends at once with that end.
        case endedSession
        /// The client stops (a terminal error, a shutdown with no link left) or the consumer ended
        /// already: it ends at once.
        case stopping
    }

    /// A consumer made in `madeIn` (checked against the current `session`) starts, taking the
    /// pushes of `filter`; `hasLink`: the client holds a link (a shutdown without one admits no
    /// consumer). Pushes held while nobody listened are offered to it first.
    mutating func addConsumer(
        _ consumer: Consumer, id: UInt64, filter: TopicFilter, madeIn: UInt64, session: UInt64, hasLink: Bool
    ) -> ConsumerAdmission {
        if madeIn != session { return .endedSession }
        if terminalError != nil || (shuttingDown && !hasLink) || consumer.isFinished { return .stopping }
        let added = ledger.consumerAdded(consumer, id: id, filter: filter)
        var actions: [Action] = []
        for push in added.pushes {
            let accepted = consumer.offer(push, wakeLater: false).offered != .refused
            if ledger.offered(push, accepted: accepted ? 1 : 0, refused: !accepted) {
                actions.append(.log(.warning, "push consumer behind: deferring reliable pushes until it catches up"))
            }
        }
        return .added(actions + added.actions.map(Action.pushes))
    }

    /// A consumer handed `taken` to the app: each push every holder took is acknowledged, and
    /// deferring ends once every consumer's buffer is below half full.
    mutating func consumerTook(_ taken: [PushKey]) -> [Action] {
        stats.pushesDelivered += taken.count
        let caughtUp = ledger.deferring && ledger.consumers.byID.values.allSatisfy(\.value.isBelowHalf)
        return ledger.taken(taken, caughtUp: caughtUp).map(Action.pushes)
    }
}

/// The ledger's events that the core hands in, each as the machine's actions.
extension ClientStateMachine {
    /// The server read enough of what was written on `generation`: acks kept for it go out, then
    /// the queue.
    mutating func linkWritable(_ generation: UInt64) -> [Action] {
        ledger.linkWritable(generation).map(Action.pushes) + [.drainQueue(generation)]
    }

    /// Consumer `id` is gone: taken out of the registry (the core collects what it took, then
    /// tells ``consumerLeft(untaken:)`` what it never took).
    mutating func removeConsumer(_ id: UInt64) -> Consumer? {
        ledger.removeConsumer(id)
    }

    /// A consumer taken out of the registry left `untaken` in its buffer (see
    /// ``PushLedger/consumerLeft(untaken:)``).
    mutating func consumerLeft(untaken: [Push]) -> [Action] {
        ledger.consumerLeft(untaken: untaken).map(Action.pushes)
    }

    /// A typed stream let `push` go without handing it over (see ``PushLedger/released(_:)``).
    mutating func released(_ push: Push) -> [Action] {
        ledger.released(push).map(Action.pushes)
    }

    /// The app asks the server to send every unacknowledged push again.
    mutating func wantSync() -> [Action] {
        ledger.wantSync().map(Action.pushes)
    }

    /// The ack batch's timer fired.
    mutating func ackTimerFired() -> [Action] {
        ledger.ackTimerFired().map(Action.pushes)
    }
}
