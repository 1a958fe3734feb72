import LongLinkCore

/// The inputs that reach one part of the machine alone, by name, so that the core changes no part
/// directly: outside the machine's files `links`, `book` and `ledger` are only read. (Swift has no
/// setter access for a type's own files across files, so that rule is kept here, not enforced.)
extension ClientStateMachine {
    /// A generation for a new link (``LinkStateMachine/newGeneration()``).
    mutating func newGeneration() -> UInt64 {
        links.newGeneration()
    }

    /// The session ends with a terminal error; false when it had ended already
    /// (``LinkStateMachine/terminate(_:)``).
    mutating func terminate(_ error: LongLinkError) -> Bool {
        links.terminate(error)
    }

    /// The core is about to close the link of `generation`; false when a close was asked already
    /// (``LinkStateMachine/closeRequested(_:)``).
    mutating func closeRequested(_ generation: UInt64) -> Bool {
        links.closeRequested(generation)
    }

    /// A migration's new link of `generation` logs in beside the current one
    /// (``LinkStateMachine/attachSuccessor(_:)``).
    mutating func attachSuccessor(_ generation: UInt64) -> LinkStateMachine.SuccessorAction {
        links.attachSuccessor(generation)
    }

    /// The successor of `generation` takes over (``LinkStateMachine/completeMigration(_:)``).
    mutating func completeMigration(_ generation: UInt64) -> LinkStateMachine.MigrationAction {
        links.completeMigration(generation)
    }

    /// Acks the link could not take now come back to the ledger (``PushLedger/ackBlocked(epoch:seqs:)``).
    mutating func ackBlocked(epoch: UInt64, seqs: [UInt64]) {
        ledger.ackBlocked(epoch: epoch, seqs: seqs)
    }

    /// A `Sync` and its `Ping` of `barrier` went out on `link` (``PushLedger/resyncSent(on:barrier:)``).
    mutating func resyncSent(on link: UInt64, barrier: UInt64) {
        ledger.resyncSent(on: link, barrier: barrier)
    }
}
