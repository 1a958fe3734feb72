/// The subscriptions keeper's work: what goes out now on the open link (leaves of abandoned
/// subscriptions, new subscriptions, refused replays whose backoff passed), or when to look again.
extension ClientStateMachine {
    /// What the keeper, waiting for work, gets.
    enum SubscriptionsDue {
        /// This work, in order: the leaves first.
        case work([SubscriptionWork])
        /// Nothing now; look again at this instant (a refused replay's backoff ends).
        case retry(at: ContinuousClock.Instant)
        /// Nothing until something changes (a subscription is made, the gate opens).
        case nothing
    }

    /// The keeper's work at `now`, taken from the books (sends are due only on the open link).
    mutating func subscriptionsDue(now: ContinuousClock.Instant) -> SubscriptionsDue {
        var open: UInt64?
        if case .open(let generation) = links.phase { open = generation }
        let work =
            subscriptionLeaves.map(SubscriptionWork.leave)
            + subscriptions.due(now: now, open: open).map(SubscriptionWork.send)
        subscriptionLeaves = []
        if !work.isEmpty { return .work(work) }
        if open != nil, let retryAt = subscriptions.nextRetry { return .retry(at: max(retryAt, now)) }
        return .nothing
    }
}
