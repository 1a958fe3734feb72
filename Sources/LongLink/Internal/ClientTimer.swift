/// Every timer of the client, by what it is for: the machine asks for one by id
/// (``ClientStateMachine/Action/schedule(_:at:)``, ``ClientStateMachine/Action/cancel(_:)``) and the
/// core holds one handle per id, so that scheduling an id again replaces its timer.
enum ClientTimer: Hashable {
    /// The heartbeat's next tick on the current link of this generation.
    case tick(UInt64)
    /// A liveness probe's answer is due on the link of this generation.
    case probe(UInt64)
    /// An adaptive heartbeat's watch after a request: something read on the link of this
    /// generation is due (``ClientStateMachine/answerTimedOut(_:now:timeout:ended:)``).
    case answer(UInt64)
    /// The supervisor's wait on the link of this generation ends to re-probe.
    case supervisorWake(UInt64)
    /// The ack batch goes out (``PushLedger/Action/armAckTimer``).
    case ack
    /// Only with ``DeadlineStrategy/deadlineHeap``: the earliest deadline.
    case deadline
    /// A graceful shutdown's grace period ends.
    case shutdown
    /// The supervisor's wait before it reconnects ends.
    case retry
    /// The subscriptions keeper's next retry (``SubscriptionBook/nextRetry``).
    case subscriptionRetry
    /// The credential's next refresh or its expiry (``CredentialSchedule/wakeAt``).
    case credential
}
