import LongLinkTestSupport
import Testing

@testable import LongLink

/// The push ledger's links and acks, without a socket: batching, which link carries each ack, and
/// what happens to the acks owed when a link closes, retires or cannot take writes.
@Suite("Push ledger acks", .sharedMachine)
struct PushLedgerTests {
    private func reliable(_ seq: UInt64, epoch: UInt64) -> Push {
        Push(seq: seq, topic: "alerts", payload: [], epoch: epoch)
    }

    /// A ledger whose link `link` is synced and has told its seq space `epoch`.
    private func ledger(link: UInt64 = 1, epoch: UInt64 = 7, maxBatch: Int = 256) -> PushLedger<Void> {
        var ledger = PushLedger<Void>(holdLimit: 10, maxBatch: maxBatch)
        ledger.linkAttached(link)
        #expect(ledger.loginSynced(link).isEmpty)
        #expect(ledger.received(reliable(1, epoch: epoch), on: link).actions.isEmpty)
        return ledger
    }

    @Test func acksAreBatchedByCountOrTimer() {
        var ledger = ledger(maxBatch: 3)
        #expect(ledger.owe(PushKey(epoch: 7, seq: 1)) == [.armAckTimer])
        #expect(ledger.owe(PushKey(epoch: 7, seq: 2)) == [])
        #expect(ledger.owe(PushKey(epoch: 7, seq: 3)) == [.cancelAckTimer, .ack(link: 1, epoch: 7, seqs: [1, 2, 3])])
        #expect(ledger.owe(PushKey(epoch: 7, seq: 4)) == [.armAckTimer])
        #expect(ledger.ackTimerFired() == [.ack(link: 1, epoch: 7, seqs: [4])])
        #expect(ledger.ackTimerFired() == [])
    }

    /// After a migration, the acks of the retiring link's seq space go on it while it answers; once
    /// the client said `GoAway` there, they are stale (their seqs mean other pushes on the new link).
    @Test func acksOfARetiringLinksSeqSpaceGoOnItUntilItSaysGoAway() {
        var ledger = ledger(link: 1, epoch: 7)
        ledger.linkAttached(2)
        #expect(ledger.loginSynced(2).isEmpty)
        #expect(ledger.received(reliable(1, epoch: 8), on: 2).actions.isEmpty)
        _ = ledger.owe(PushKey(epoch: 7, seq: 5))
        _ = ledger.owe(PushKey(epoch: 8, seq: 3))
        let flushed = ledger.flushAcks()
        #expect(flushed == [.cancelAckTimer, .ack(link: 1, epoch: 7, seqs: [5]), .ack(link: 2, epoch: 8, seqs: [3])])
        ledger.linkGoingAway(1)
        _ = ledger.owe(PushKey(epoch: 7, seq: 6))
        #expect(ledger.ackTimerFired() == [])
        #expect(ledger.staleAcksDropped == 1)
    }

    /// The link closes with acks owed: they wait, and go out on the next link once its first
    /// reliable push tells the same seq space; those of another seq space are dropped then.
    @Test func acksOwedWhenTheLinkClosesWaitForTheNextLinksEpoch() {
        var ledger = ledger(link: 1, epoch: 7)
        _ = ledger.owe(PushKey(epoch: 7, seq: 4))
        _ = ledger.owe(PushKey(epoch: 6, seq: 2))
        ledger.linkClosed(1)
        #expect(ledger.ackTimerFired() == [])
        #expect(ledger.awaiting == [PushKey(epoch: 7, seq: 4), PushKey(epoch: 6, seq: 2)])
        ledger.linkAttached(2)
        // Synced, but its seq space is not known yet: they still wait.
        #expect(ledger.loginSynced(2) == [])
        #expect(ledger.awaiting.count == 2)
        #expect(ledger.received(reliable(9, epoch: 7), on: 2).actions == [.armAckTimer])
        #expect(ledger.staleAcksDropped == 1)
        #expect(ledger.ackTimerFired() == [.ack(link: 2, epoch: 7, seqs: [4])])
        #expect(ledger.awaiting.isEmpty)
    }

    /// A link that cannot take writes hands its acks back; they go out when it can, and their
    /// number stays bounded meanwhile.
    @Test func acksALinkCouldNotTakeWaitUntilItIsWritableBounded() {
        var ledger = ledger(link: 1, epoch: 7)
        ledger.ackBlocked(epoch: 7, seqs: Array(1...UInt64(PushLedger<Void>.awaitingLimit + 10)))
        #expect(ledger.awaiting.count == PushLedger<Void>.awaitingLimit)
        #expect(ledger.awaiting.first == PushKey(epoch: 7, seq: 11))
        let released = ledger.linkWritable(1)
        #expect(ledger.awaiting.isEmpty)
        let sent = released.reduce(into: 0) { count, action in
            if case .ack(1, 7, let seqs) = action { count += seqs.count }
        }
        #expect(sent == PushLedger<Void>.awaitingLimit)
    }

    /// A `Sync` asked for while no link is synced is owed, and the next login's `Sync` pays it.
    @Test func aSyncWantedWithoutASyncedLinkIsOwedUntilLogin() {
        var ledger = ledger(link: 1, epoch: 7)
        #expect(ledger.wantSync() == [.sync(link: 1)])
        ledger.linkClosed(1)
        #expect(ledger.wantSync() == [])
        #expect(ledger.syncWanted)
        ledger.linkAttached(2)
        _ = ledger.loginSynced(2)
        #expect(!ledger.syncWanted)
    }

    /// A taken push that its ack to a link whose seq space is another one (the server numbered
    /// anew) would acknowledge another push: it is dropped, not sent.
    @Test func anAckOfAnotherSeqSpaceThanTheCurrentLinksIsDropped() {
        var ledger = ledger(link: 1, epoch: 8)
        _ = ledger.owe(PushKey(epoch: 7, seq: 3))
        #expect(ledger.flushAcks() == [.cancelAckTimer])
        #expect(ledger.staleAcksDropped == 1)
    }
}
