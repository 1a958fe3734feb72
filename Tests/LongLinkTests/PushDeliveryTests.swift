import LongLinkTestSupport
import Testing

@testable import LongLink

/// Push delivery decided without a socket: de-duplication, holding, taking, acks and `Sync`.
@Suite("Push delivery state machine", .sharedMachine)
struct PushDeliveryTests {
    private func push(_ seq: UInt64, _ topic: String = "alerts") -> Push {
        Push(seq: seq, topic: topic, payload: [])
    }

    /// Offers `push` as the core does when every matching consumer accepts it; how many did.
    private func deliver(_ push: Push, to machine: inout PushLedger<Void>) -> Int {
        guard case .offer = machine.received(push).delivery else { return 0 }
        let matching = machine.consumers.byID.values.count { $0.filter.takes(push) }
        _ = machine.offered(push, accepted: matching, refused: false)
        return matching
    }

    @Test func aReliablePushIsAckedOnceTakenAndARedeliveryIsAckedAgainNotDelivered() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        #expect(deliver(push(1), to: &machine) == 1)
        // Buffered, not taken: a redelivery is a duplicate, and nothing is acked.
        #expect(machine.received(push(1)).delivery == .dropDuplicate)
        #expect(machine.outcome { $0.taken([1], caughtUp: false) }.ack == [1])
        #expect(machine.seqs.isEmpty)
        // Taken: a redelivery (the Ack was lost) is acked again and not delivered.
        #expect(machine.received(push(1)).delivery == .ackAgain)
    }

    /// A push a typed consumer let go (it did not decode, nobody saw it) is the server's again: not
    /// acknowledged, no longer a duplicate, and no `Sync` asked for at once.
    @Test func aReleasedPushIsNotAckedAndComesBackAsNew() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        #expect(deliver(push(1), to: &machine) == 1)
        #expect(machine.outcome { $0.released(push(1)) }.ack == [])
        #expect(machine.seqs.isEmpty)
        #expect(!machine.wasDelivered(1))
        #expect(!machine.syncWanted)
        #expect(machine.received(push(1)).delivery == .offer)
        // With a second consumer that took it, the release completes the take: acknowledge.
        _ = machine.consumerAdded((), id: 2, filter: TopicFilter(nil))
        #expect(deliver(push(2), to: &machine) == 2)
        #expect(machine.outcome { $0.taken([2], caughtUp: false) }.ack == [])
        #expect(machine.outcome { $0.released(push(2)) }.ack == [2])
    }

    @Test func severalConsumersEachGetEveryPushAndTheAckWaitsForTheLastTake() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        _ = machine.consumerAdded((), id: 2, filter: TopicFilter(nil))
        _ = machine.consumerAdded((), id: 3, filter: TopicFilter("quotes"))
        #expect(deliver(push(1), to: &machine) == 2)
        #expect(machine.outcome { $0.taken([1], caughtUp: false) }.ack == [])
        #expect(machine.seqs[1] == .buffered(holders: 1, taken: true))
        #expect(machine.outcome { $0.taken([1], caughtUp: false) }.ack == [1])
    }

    @Test func aConsumerThatLeavesUntakenHandsItsPushesBackOrCompletesTheAck() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        _ = machine.consumerAdded((), id: 2, filter: TopicFilter("alerts"))
        _ = deliver(push(1), to: &machine)
        _ = deliver(push(2), to: &machine)
        // Consumer 1 took seq 1; consumer 2 leaves with both untaken.
        _ = machine.outcome { $0.taken([1], caughtUp: false) }
        let removed = machine.outcome { $0.consumerRemoved(2, untaken: [push(1), push(2)]) }
        // Seq 1: every remaining holder took it, so the app has it. Seq 2 is still in consumer 1.
        #expect(removed.ack == [1])
        #expect(!removed.sync)
        #expect(machine.seqs[2] == .buffered(holders: 1, taken: false))
        // Consumer 1 leaves too without taking seq 2: it is the server's again, and the Sync waits
        // for the next consumer.
        let last = machine.outcome { $0.consumerRemoved(1, untaken: [push(2)]) }
        #expect(last.ack.isEmpty && !last.sync)
        #expect(machine.syncWanted)
        #expect(machine.consumerAdded((), id: 3, filter: TopicFilter("alerts")).sync)
        #expect(machine.received(push(2)).delivery == .offer)
    }

    @Test func aConsumerThatLeavesWhileAnotherWantsItsPushesAsksForSyncNow() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        _ = deliver(push(5), to: &machine)
        _ = machine.consumerAdded((), id: 2, filter: TopicFilter("alerts"))
        #expect(machine.outcome { $0.consumerRemoved(1, untaken: [push(5)]) }.sync)
        #expect(machine.received(push(5)).delivery == .offer)
    }

    @Test func pushesWithoutAConsumerAreHeldUpToTheLimitThenLeftWithTheServer() {
        var machine = PushLedger<Void>.testing(holdLimit: 2)
        #expect(machine.received(push(1)).delivery == .held)
        #expect(machine.received(push(2)).delivery == .held)
        #expect(machine.received(push(3)).delivery == .dropDeferred)
        #expect(machine.received(push(0, "ticks")).delivery == .dropUnwanted)
        let added = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        #expect(added.pushes.map(\.seq) == [1, 2])
        #expect(added.sync)  // for seq 3
        #expect(machine.held.isEmpty)
    }

    @Test func aFullConsumerDefersReliablePushesUntilItCatchesUp() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        guard case .offer = machine.received(push(1)).delivery else {
            Issue.record("expected an offer")
            return
        }
        let r1 = machine.offered(push(1), accepted: 0, refused: true)
        #expect(r1)
        #expect(machine.deferring)
        #expect(machine.received(push(2)).delivery == .dropDeferred)
        // Best-effort pushes still flow to whoever has room.
        #expect(machine.received(push(0)).delivery == .offer)
        #expect(!machine.outcome { $0.taken([], caughtUp: false) }.sync)
        #expect(machine.outcome { $0.taken([], caughtUp: true) }.sync)
        #expect(!machine.deferring)
        #expect(machine.received(push(1)).delivery == .offer)
    }

    /// Seq 1 of a new epoch (a store that restarted) is a new push, while a repeat of seq 1 of
    /// the old epoch is still known as taken.
    @Test func eachEpochIsASeqSpaceOfItsOwn() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        let old = Push(seq: 1, topic: "alerts", payload: [], epoch: 7)
        #expect(deliver(old, to: &machine) == 1)
        #expect(machine.outcome { $0.taken([old.key], caughtUp: false) }.ack == [old.key])
        let new = Push(seq: 1, topic: "alerts", payload: [], epoch: 8)
        #expect(deliver(new, to: &machine) == 1)
        #expect(machine.received(old).delivery == .ackAgain)
        #expect(machine.received(new).delivery == .dropDuplicate)
        // Only the last few epochs are remembered.
        for epoch: UInt64 in 9...20 {
            let push = Push(seq: 1, topic: "alerts", payload: [], epoch: epoch)
            _ = deliver(push, to: &machine)
            _ = machine.outcome { $0.taken([push.key], caughtUp: false) }
        }
        #expect(machine.delivered.count == PushLedger<Void>.epochLimit)
    }

    /// The same interleaving as in `PushOrderTests`, without a socket: 1–8 buffered, 9–31 deferred; the consumer
    /// catches up and `Sync` goes out; 32–40, written by the server before it read the `Sync`,
    /// arrive before its redelivery and must not overtake 9–31.
    @Test func pushesSentBeforeTheServerReadTheSyncWaitForItsRedelivery() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        for seq: UInt64 in 1...8 { #expect(deliver(push(seq), to: &machine) == 1) }
        #expect(machine.received(push(9)).delivery == .offer)
        let startsDeferring = machine.offered(push(9), accepted: 0, refused: true)
        #expect(startsDeferring)
        for seq: UInt64 in 10...31 { #expect(machine.received(push(seq), on: 1).delivery == .dropDeferred) }
        let caughtUp = machine.outcome { $0.taken([1, 2, 3, 4, 5], caughtUp: true) }
        #expect(caughtUp.sync)
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 31, barrier: 100)
        for seq: UInt64 in 32...40 { #expect(machine.received(push(seq), on: 1).delivery == .dropDeferred) }
        // Another link's pushes are another stream: the wait does not apply to them.
        #expect(machine.received(push(50), on: 2).delivery == .offer)
        // The redelivery begins (a seq not above the last one): the wait ends, all flows in order.
        #expect(machine.received(push(1), on: 1).delivery == .ackAgain)
        #expect(machine.redeliveryWait == nil)
        #expect(machine.received(push(6), on: 1).delivery == .dropDuplicate)
        for seq: UInt64 in 9...40 { #expect(machine.received(push(seq), on: 1).delivery == .offer) }
        // Its Pong, late, asks for nothing more.
        let late = machine.outcome { $0.pongReceived(100) }.sync
        #expect(!late)
    }

    /// Another device acknowledged everything the client saw, so the redelivery begins above the
    /// last seq and looks like the older stream: the `Pong` after the `Sync` ends the wait, and a
    /// `Sync` more brings what was dropped, its redelivery now starting below the last seq.
    @Test func aRedeliveryAboveTheLastSeqEndsTheWaitAtThePongWithOneMoreSync() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 31, barrier: 100)
        for seq: UInt64 in 32...45 { #expect(machine.received(push(seq), on: 1).delivery == .dropDeferred) }
        let heartbeat = machine.outcome { $0.pongReceived(99) }.sync
        #expect(!heartbeat)
        let barrier = machine.outcome { $0.pongReceived(100) }.sync
        #expect(barrier)
        #expect(machine.redeliveryWait == nil)
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 45, barrier: 101)
        for seq: UInt64 in 41...45 { #expect(machine.received(push(seq), on: 1).delivery == .offer) }
        // Nothing dropped before the Pong: nothing more to ask for.
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 45, barrier: 102)
        let quiet = machine.outcome { $0.pongReceived(102) }.sync
        #expect(!quiet)
    }

    /// The server holds the redelivery back (one per interval): the `Pong` comes first, with
    /// nothing dropped during the wait. Seq 9, dropped before the `Sync`, is still owed, so newer
    /// pushes that arrive after the `Pong` must not overtake it: they are dropped, the first asks
    /// for one more `Sync`, and the redelivery brings 9 before them.
    @Test func aRedeliveryHeldBackPastThePongIsStillAwaited() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        for seq: UInt64 in 1...8 { #expect(deliver(push(seq), to: &machine) == 1) }
        #expect(machine.received(push(9), on: 1).delivery == .offer)
        let startsDeferring = machine.offered(push(9), accepted: 0, refused: true)
        #expect(startsDeferring)
        let caughtUp = machine.outcome { $0.taken([1, 2, 3, 4, 5], caughtUp: true) }.sync
        #expect(caughtUp)
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 9, barrier: 100)
        let pong = machine.outcome { $0.pongReceived(100) }.sync
        #expect(!pong)
        #expect(machine.redeliveryWait != nil)
        let first = machine.received(push(10), on: 1)
        #expect(first.delivery == .dropDeferred)
        #expect(first.actions == [.sync(link: PushLedger<Void>.testLink)])
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 10, barrier: 101)
        for seq: UInt64 in 11...17 {
            let later = machine.received(push(seq), on: 1)
            #expect(later.delivery == .dropDeferred)
            #expect(later.actions.isEmpty)
        }
        // The redelivery begins at 6 (5 was acknowledged): 9 comes before every newer seq.
        #expect(machine.received(push(6), on: 1).delivery == .dropDuplicate)
        #expect(machine.redeliveryWait == nil)
        for seq: UInt64 in 7...8 { #expect(machine.received(push(seq), on: 1).delivery == .dropDuplicate) }
        for seq: UInt64 in 9...17 { #expect(machine.received(push(seq), on: 1).delivery == .offer) }
        #expect(!machine.dropsOwed)
    }

    /// A push of another epoch (numbering that started again) ends the wait, as does a login's
    /// `Sync` (a new link has no older stream); with no push seen yet, the first one is waited out.
    @Test func anotherEpochOrANewLinkEndsTheWait() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        machine.resyncSent(on: 1, epoch: 7, lastSeq: 31, barrier: 100)
        let stale = Push(seq: 32, topic: "alerts", payload: [], epoch: 7)
        #expect(machine.received(stale, on: 1).delivery == .dropDeferred)
        #expect(machine.received(Push(seq: 40, topic: "alerts", payload: [], epoch: 8), on: 1).delivery == .offer)
        #expect(machine.redeliveryWait == nil)
        machine.resyncSent(on: 1, epoch: nil, lastSeq: nil, barrier: 101)
        #expect(machine.received(push(3), on: 1).delivery == .dropDeferred)
        #expect(machine.received(push(2), on: 1).delivery == .offer)
        machine.resyncSent(on: 1, epoch: nil, lastSeq: nil, barrier: 102)
        _ = machine.loginSynced(PushLedger<Void>.testLink)
        #expect(machine.received(push(4), on: 2).delivery == .offer)
    }

    @Test func stoppingForgetsEveryConsumerAndEveryHeldPush() {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter("alerts"))
        _ = deliver(push(1), to: &machine)
        #expect(machine.received(push(2, "other")).delivery == .held)
        machine.removeAll()
        #expect(machine.consumers.isEmpty && machine.seqs.isEmpty && machine.held.isEmpty)
    }
}

/// What one event of the ledger owed, in the shape these tests read: the acks it added to the
/// batch (taken out, so that each event's own are seen) and whether it asked for a `Sync` now.
struct LedgerOutcome {
    var ack: [PushKey]
    var sync: Bool
}

extension PushLedger {
    /// The synced link of ``testing(holdLimit:holdByteLimit:)``: a `Sync` asked for now names it.
    static var testLink: UInt64 { 9 }

    /// A ledger whose current link is synced (so a `Sync` goes out at once rather than being
    /// owed) and whose batch never fills (so owed acks stay in it for ``outcome(_:)``).
    static func testing(holdLimit: Int, holdByteLimit: Int = .max) -> PushLedger {
        var ledger = PushLedger(holdLimit: holdLimit, holdByteLimit: holdByteLimit, maxBatch: .max)
        ledger.linkAttached(testLink)
        _ = ledger.loginSynced(testLink)
        return ledger
    }

    mutating func outcome(_ event: (inout PushLedger) -> [Action]) -> LedgerOutcome {
        let actions = event(&self)
        defer { batch.removeAll() }
        return LedgerOutcome(ack: batch, sync: actions.contains(.sync(link: Self.testLink)))
    }
}

extension PushLedger.ConsumerAdded {
    var sync: Bool { actions.contains(.sync(link: PushLedger<Consumer>.testLink)) }
}

/// A seq of epoch 0 written as a number, as the push state machine's tests do.
extension PushKey: ExpressibleByIntegerLiteral {
    public init(integerLiteral seq: UInt64) {
        self.init(epoch: 0, seq: seq)
    }
}
