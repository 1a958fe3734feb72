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
