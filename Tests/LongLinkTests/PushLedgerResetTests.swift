import LongLinkTestSupport
import Testing

@testable import LongLink

/// The push ledger at the end of a session: nothing of the last user's push state survives.
@Suite("Push ledger reset", .sharedMachine)
struct PushLedgerResetTests {
    private func reliable(_ seq: UInt64, epoch: UInt64 = 0, topic: String = "alerts") -> Push {
        Push(seq: seq, topic: topic, payload: [1, 2, 3], epoch: epoch)
    }

    /// A ledger with every piece of state set: consumers, held pushes, seqs buffered and
    /// delivered, a deferral, a wanted `Sync`, a redelivery wait, acks batched and awaiting, links.
    private func busyLedger() -> PushLedger<Void> {
        var ledger = PushLedger<Void>(holdLimit: 10, holdByteLimit: 1_000, maxBatch: 256)
        ledger.linkAttached(1)
        _ = ledger.loginSynced(1)
        _ = ledger.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        // Seqs 1 and 2 buffered; 1 taken (delivered, an ack owed), 2 not.
        for seq: UInt64 in 1...2 {
            #expect(ledger.received(reliable(seq), on: 1).delivery == .offer)
            _ = ledger.offered(reliable(seq), accepted: 1, refused: false)
        }
        _ = ledger.taken([PushKey(epoch: 0, seq: 1)], caughtUp: false)
        // Seq 3 finds the consumer full: deferring.
        #expect(ledger.received(reliable(3), on: 1).delivery == .offer)
        let startsDeferring = ledger.offered(reliable(3), accepted: 0, refused: true)
        #expect(startsDeferring)
        // A push nobody reads is held.
        #expect(ledger.received(reliable(4, topic: "news"), on: 1).delivery == .dropDeferred)
        ledger.resyncSent(on: 1, barrier: 99)
        ledger.ackBlocked(epoch: 0, seqs: [7])
        ledger.linkClosed(1)
        _ = ledger.wantSync()
        return ledger
    }

    @Test func theBusyLedgerHasEveryPieceOfState() {
        let ledger = busyLedger()
        #expect(ledger.deferring)
        #expect(ledger.syncWanted)
        #expect(ledger.redeliveryWait != nil)
        #expect(!ledger.delivered.isEmpty)
        #expect(!ledger.awaiting.isEmpty)
        #expect(!ledger.batch.isEmpty && ledger.ackTimerArmed)
        #expect(!ledger.seqs.isEmpty)
        #expect(ledger.consumers.byID.count == 1)
    }

    /// Every stored property is as in a new ledger, the statistic of stale acks apart.
    @Test func aResetLedgerIsANewLedger() {
        var ledger = busyLedger()
        var held = PushLedger<Void>(holdLimit: 10, holdByteLimit: 1_000)
        _ = held.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        #expect(held.received(reliable(1, topic: "news")).delivery == .held)
        held.removeAll()
        #expect(held.held.isEmpty && held.heldBytes == 0)
        ledger.removeAll()
        let fresh = PushLedger<Void>(holdLimit: 10, holdByteLimit: 1_000, maxBatch: 256)
        #expect(ledger.consumers.byID.isEmpty)
        #expect(ledger.seqs == fresh.seqs)
        #expect(ledger.held.isEmpty && ledger.heldBytes == 0)
        #expect(ledger.delivered.isEmpty)
        #expect(ledger.deferring == fresh.deferring)
        #expect(ledger.syncWanted == fresh.syncWanted)
        #expect(ledger.redeliveryWait == nil)
        #expect(ledger.links.isEmpty && ledger.syncedLink == nil)
        #expect(ledger.batch.isEmpty && !ledger.ackTimerArmed)
        #expect(ledger.awaiting.isEmpty)
        #expect(ledger.holdLimit == fresh.holdLimit && ledger.holdByteLimit == fresh.holdByteLimit)
        #expect(ledger.maxBatch == fresh.maxBatch)
    }

    /// The next user's pushes after a reset: with epoch 0, seq 1 again is a new push, not a
    /// repeat; and a deferral of the last session holds nothing back.
    @Test func afterAResetTheNextUsersPushesOfTheSameSeqsAreOffered() {
        var ledger = busyLedger()
        ledger.removeAll()
        ledger.linkAttached(2)
        #expect(ledger.loginSynced(2).isEmpty)
        _ = ledger.consumerAdded((), id: 5, filter: TopicFilter("alerts"))
        for seq: UInt64 in 1...3 {
            #expect(ledger.received(reliable(seq), on: 2).delivery == .offer)
            let deferring = ledger.offered(reliable(seq), accepted: 1, refused: false)
            #expect(!deferring)
        }
        // No ack of the last user's went out with the next user's.
        let acks = ledger.taken((1...3).map { PushKey(epoch: 0, seq: $0) }, caughtUp: true)
        #expect(acks == [.armAckTimer])
        #expect(ledger.ackTimerFired() == [.ack(link: 2, epoch: 0, seqs: [1, 2, 3])])
    }

    /// A reset keeps the count of stale acks: a statistic of the client's life.
    @Test func aResetKeepsTheStaleAckCount() {
        var ledger = PushLedger<Void>(holdLimit: 10)
        ledger.linkAttached(1)
        _ = ledger.loginSynced(1)
        _ = ledger.received(reliable(1, epoch: 7), on: 1)
        _ = ledger.owe(PushKey(epoch: 6, seq: 1))
        _ = ledger.ackTimerFired()
        #expect(ledger.staleAcksDropped == 1)
        ledger.removeAll()
        #expect(ledger.staleAcksDropped == 1)
    }
}
