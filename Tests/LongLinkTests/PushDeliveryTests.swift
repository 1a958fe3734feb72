import Testing

@testable import LongLink

/// Push delivery decided without a socket: de-duplication, holding, taking, acks and `Sync`.
@Suite("Push delivery state machine")
struct PushDeliveryTests {
    private func push(_ seq: UInt64, _ topic: String = "alerts") -> Push {
        Push(seq: seq, topic: topic, payload: [])
    }

    /// Offers `push` as the core does when every matching consumer accepts it; how many did.
    private func deliver(_ push: Push, to machine: inout PushDelivery) -> Int {
        guard case .offer = machine.received(push) else { return 0 }
        let matching = machine.consumers.values.count { PushDelivery.consumer(wanting: $0, takes: push) }
        _ = machine.offered(push, accepted: matching, refused: false)
        return matching
    }

    @Test func aReliablePushIsAckedOnceTakenAndARedeliveryIsAckedAgainNotDelivered() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        #expect(deliver(push(1), to: &machine) == 1)
        // Buffered, not taken: a redelivery is a duplicate, and nothing is acked.
        #expect(machine.received(push(1)) == .dropDuplicate)
        #expect(machine.taken([1], caughtUp: false).ack == [1])
        #expect(machine.seqs.isEmpty)
        // Taken: a redelivery (the Ack was lost) is acked again and not delivered.
        #expect(machine.received(push(1)) == .ackAgain)
    }

    /// A push a typed consumer let go (it did not decode, nobody saw it) is the server's again: not
    /// acknowledged, no longer a duplicate, and no `Sync` asked for at once.
    @Test func aReleasedPushIsNotAckedAndComesBackAsNew() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        #expect(deliver(push(1), to: &machine) == 1)
        #expect(machine.released(push(1)) == nil)
        #expect(machine.seqs.isEmpty)
        #expect(!machine.wasDelivered(1))
        #expect(!machine.syncWanted)
        #expect(machine.received(push(1)) == .offer)
        // With a second consumer that took it, the release completes the take: acknowledge.
        _ = machine.consumerAdded(2, topic: nil)
        #expect(deliver(push(2), to: &machine) == 2)
        #expect(machine.taken([2], caughtUp: false).ack == [])
        #expect(machine.released(push(2)) == 2)
    }

    @Test func severalConsumersEachGetEveryPushAndTheAckWaitsForTheLastTake() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        _ = machine.consumerAdded(2, topic: nil)
        _ = machine.consumerAdded(3, topic: "quotes")
        #expect(deliver(push(1), to: &machine) == 2)
        #expect(machine.taken([1], caughtUp: false).ack == [])
        #expect(machine.seqs[1] == .buffered(holders: 1, taken: true))
        #expect(machine.taken([1], caughtUp: false).ack == [1])
    }

    @Test func aConsumerThatLeavesUntakenHandsItsPushesBackOrCompletesTheAck() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        _ = machine.consumerAdded(2, topic: "alerts")
        _ = deliver(push(1), to: &machine)
        _ = deliver(push(2), to: &machine)
        // Consumer 1 took seq 1; consumer 2 leaves with both untaken.
        _ = machine.taken([1], caughtUp: false)
        let removed = machine.consumerRemoved(2, untaken: [push(1), push(2)])
        // Seq 1: every remaining holder took it, so the app has it. Seq 2 is still in consumer 1.
        #expect(removed.ack == [1])
        #expect(!removed.sync)
        #expect(machine.seqs[2] == .buffered(holders: 1, taken: false))
        // Consumer 1 leaves too without taking seq 2: it is the server's again, and the Sync waits
        // for the next consumer.
        let last = machine.consumerRemoved(1, untaken: [push(2)])
        #expect(last.ack.isEmpty && !last.sync)
        #expect(machine.syncWanted)
        #expect(machine.consumerAdded(3, topic: "alerts").sync)
        #expect(machine.received(push(2)) == .offer)
    }

    @Test func aConsumerThatLeavesWhileAnotherWantsItsPushesAsksForSyncNow() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        _ = deliver(push(5), to: &machine)
        _ = machine.consumerAdded(2, topic: "alerts")
        #expect(machine.consumerRemoved(1, untaken: [push(5)]).sync)
        #expect(machine.received(push(5)) == .offer)
    }

    @Test func pushesWithoutAConsumerAreHeldUpToTheLimitThenLeftWithTheServer() {
        var machine = PushDelivery(holdLimit: 2)
        #expect(machine.received(push(1)) == .held)
        #expect(machine.received(push(2)) == .held)
        #expect(machine.received(push(3)) == .dropDeferred)
        #expect(machine.received(push(0, "ticks")) == .dropUnwanted)
        let added = machine.consumerAdded(1, topic: "alerts")
        #expect(added.pushes.map(\.seq) == [1, 2])
        #expect(added.sync)  // for seq 3
        #expect(machine.held.isEmpty)
    }

    @Test func aFullConsumerDefersReliablePushesUntilItCatchesUp() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        guard case .offer = machine.received(push(1)) else {
            Issue.record("expected an offer")
            return
        }
        let r1 = machine.offered(push(1), accepted: 0, refused: true)
        #expect(r1)
        #expect(machine.deferring)
        #expect(machine.received(push(2)) == .dropDeferred)
        // Best-effort pushes still flow to whoever has room.
        #expect(machine.received(push(0)) == .offer)
        #expect(!machine.taken([], caughtUp: false).sync)
        #expect(machine.taken([], caughtUp: true).sync)
        #expect(!machine.deferring)
        #expect(machine.received(push(1)) == .offer)
    }

    /// Seq 1 of a new epoch (a store that restarted) is a new push, while a repeat of seq 1 of
    /// the old epoch is still known as taken.
    @Test func eachEpochIsASeqSpaceOfItsOwn() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        let old = Push(seq: 1, topic: "alerts", payload: [], epoch: 7)
        #expect(deliver(old, to: &machine) == 1)
        #expect(machine.taken([old.key], caughtUp: false).ack == [old.key])
        let new = Push(seq: 1, topic: "alerts", payload: [], epoch: 8)
        #expect(deliver(new, to: &machine) == 1)
        #expect(machine.received(old) == .ackAgain)
        #expect(machine.received(new) == .dropDuplicate)
        // Only the last few epochs are remembered.
        for epoch: UInt64 in 9...20 {
            let push = Push(seq: 1, topic: "alerts", payload: [], epoch: epoch)
            _ = deliver(push, to: &machine)
            _ = machine.taken([push.key], caughtUp: false)
        }
        #expect(machine.delivered.count == PushDelivery.epochLimit)
    }

    /// The same interleaving as in `PushOrderTests`, without a socket: 1–8 buffered, 9–31 deferred; the consumer
    /// catches up and `Sync` goes out; 32–40, written by the server before it read the `Sync`,
    /// arrive before its redelivery and must not overtake 9–31.
    @Test func pushesSentBeforeTheServerReadTheSyncWaitForItsRedelivery() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        for seq: UInt64 in 1...8 { #expect(deliver(push(seq), to: &machine) == 1) }
        #expect(machine.received(push(9)) == .offer)
        let startsDeferring = machine.offered(push(9), accepted: 0, refused: true)
        #expect(startsDeferring)
        for seq: UInt64 in 10...31 { #expect(machine.received(push(seq), on: 1) == .dropDeferred) }
        let caughtUp = machine.taken([1, 2, 3, 4, 5], caughtUp: true)
        #expect(caughtUp.sync)
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 31, barrier: 100)
        for seq: UInt64 in 32...40 { #expect(machine.received(push(seq), on: 1) == .dropDeferred) }
        // Another link's pushes are another stream: the wait does not apply to them.
        #expect(machine.received(push(50), on: 2) == .offer)
        // The redelivery begins (a seq not above the last one): the wait ends, all flows in order.
        #expect(machine.received(push(1), on: 1) == .ackAgain)
        #expect(machine.redeliveryWait == nil)
        #expect(machine.received(push(6), on: 1) == .dropDuplicate)
        for seq: UInt64 in 9...40 { #expect(machine.received(push(seq), on: 1) == .offer) }
        // Its Pong, late, asks for nothing more.
        let late = machine.pongReceived(100)
        #expect(!late)
    }

    /// Another device acknowledged everything the client saw, so the redelivery begins above the
    /// last seq and looks like the older stream: the `Pong` after the `Sync` ends the wait, and a
    /// `Sync` more brings what was dropped, its redelivery now starting below the last seq.
    @Test func aRedeliveryAboveTheLastSeqEndsTheWaitAtThePongWithOneMoreSync() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 31, barrier: 100)
        for seq: UInt64 in 32...45 { #expect(machine.received(push(seq), on: 1) == .dropDeferred) }
        let heartbeat = machine.pongReceived(99)
        #expect(!heartbeat)
        let barrier = machine.pongReceived(100)
        #expect(barrier)
        #expect(machine.redeliveryWait == nil)
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 45, barrier: 101)
        for seq: UInt64 in 41...45 { #expect(machine.received(push(seq), on: 1) == .offer) }
        // Nothing dropped before the Pong: nothing more to ask for.
        machine.resyncSent(on: 1, epoch: 0, lastSeq: 45, barrier: 102)
        let quiet = machine.pongReceived(102)
        #expect(!quiet)
    }

    /// A push of another epoch (numbering that started again) ends the wait, as does a login's
    /// `Sync` (a new link has no older stream); with no push seen yet, the first one is waited out.
    @Test func anotherEpochOrANewLinkEndsTheWait() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        machine.resyncSent(on: 1, epoch: 7, lastSeq: 31, barrier: 100)
        #expect(machine.received(Push(seq: 32, topic: "alerts", payload: [], epoch: 7), on: 1) == .dropDeferred)
        #expect(machine.received(Push(seq: 40, topic: "alerts", payload: [], epoch: 8), on: 1) == .offer)
        #expect(machine.redeliveryWait == nil)
        machine.resyncSent(on: 1, epoch: nil, lastSeq: nil, barrier: 101)
        #expect(machine.received(push(3), on: 1) == .dropDeferred)
        #expect(machine.received(push(2), on: 1) == .offer)
        machine.resyncSent(on: 1, epoch: nil, lastSeq: nil, barrier: 102)
        machine.syncSent()
        #expect(machine.received(push(4), on: 2) == .offer)
    }

    @Test func stoppingForgetsEveryConsumerAndEveryHeldPush() {
        var machine = PushDelivery(holdLimit: 10)
        _ = machine.consumerAdded(1, topic: "alerts")
        _ = deliver(push(1), to: &machine)
        #expect(machine.received(push(2, "other")) == .held)
        machine.removeAll()
        #expect(machine.consumers.isEmpty && machine.seqs.isEmpty && machine.held.isEmpty)
    }
}

/// A seq of epoch 0 written as a number, as the push state machine's tests do.
extension PushKey: ExpressibleByIntegerLiteral {
    public init(integerLiteral seq: UInt64) {
        self.init(epoch: 0, seq: seq)
    }
}
