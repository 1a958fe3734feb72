import LongLinkTestSupport
import Testing

@testable import LongLinkServer

@Suite("Ack merger: which acks reach the store, one call at a time", .sharedMachine)
struct AckMergerTests {
    @Test func onlySeqsSentInTheCurrentSpaceAreAcknowledged() {
        var acks = AckMerger()
        #expect(acks.received([1, 2], epoch: 0).call == nil)
        acks.sent(first: 3, last: 5, epoch: 7)
        // 0, 1 and 2 were gone from the store before this connection read it; 6 and 99 never sent.
        #expect(acks.received([0, 1, 2, 3, 5, 6, 99], epoch: 7).call == AckMerger.Call(seqs: [3, 5], epoch: 7))
        #expect(acks.callReturned(succeeded: true) == nil)
        // Another principal's seqs are another sequence.
        acks.principalChanged()
        #expect(acks.received([4], epoch: 7).call == nil)
    }

    @Test func repeatsNeverReachTheStoreAgain() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 1, epoch: 7)
        #expect(acks.received([1], epoch: 7).call == AckMerger.Call(seqs: [1], epoch: 7))
        for _ in 0..<1_000 { #expect(acks.received([1], epoch: 7).call == nil) }
        #expect(acks.callReturned(succeeded: true) == nil)
        for _ in 0..<1_000 { #expect(acks.received([1], epoch: 7).call == nil) }
        #expect(acks.floor == 1)
        #expect(acks.rememberedCount == 0)
    }

    @Test func acksMergeWhileACallIsInFlight() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 10, epoch: 7)
        #expect(acks.received([1], epoch: 7).call == AckMerger.Call(seqs: [1], epoch: 7))
        #expect(acks.isCalling)
        #expect(acks.received([2, 3], epoch: 7).call == nil)
        #expect(acks.received([3, 4, 9], epoch: 7).call == nil)
        #expect(acks.callReturned(succeeded: true) == AckMerger.Call(seqs: [2, 3, 4, 9], epoch: 7))
        #expect(acks.callReturned(succeeded: true) == nil)
        #expect(!acks.isCalling)
        #expect(acks.floor == 4)
    }

    @Test func aFailedCallsSeqsMayBeAcknowledgedAgain() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 3, epoch: 7)
        #expect(acks.received([1, 2], epoch: 7).call == AckMerger.Call(seqs: [1, 2], epoch: 7))
        #expect(acks.callReturned(succeeded: false) == nil)
        // Redelivered after the next Sync, acknowledged again: it goes to the store again.
        #expect(acks.received([2, 1], epoch: 7).call == AckMerger.Call(seqs: [2, 1], epoch: 7))
    }

    @Test func theFloorNeverRisesOverAcksNotStoredYet() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 3, epoch: 7)
        #expect(acks.received([1], epoch: 7).call?.seqs == [1])
        #expect(acks.received([2], epoch: 7).call == nil)
        #expect(acks.callReturned(succeeded: true)?.seqs == [2])
        #expect(acks.floor == 1)
        // The call for 2 fails: a later ack of 2 must reach the store again.
        #expect(acks.callReturned(succeeded: false) == nil)
        #expect(acks.floor == 1)
        #expect(acks.received([2], epoch: 7).call?.seqs == [2])
    }

    @Test func acksOfAnotherEpochAreIgnoredAndLegacyAcksTakeTheCurrentOne() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 3, epoch: 7)
        // The store numbered anew (epoch 8) while acks of epoch 7 were on their way.
        acks.sent(first: 1, last: 2, epoch: 8)
        let stale = acks.received([1, 2, 3], epoch: 7)
        #expect(!stale.current)
        #expect(stale.call == nil)
        #expect(acks.received([1], epoch: 0).call == AckMerger.Call(seqs: [1], epoch: 8))
        #expect(acks.callReturned(succeeded: true) == nil)
        #expect(acks.received([2], epoch: 8).call == AckMerger.Call(seqs: [2], epoch: 8))
    }

    @Test func aCallOfAnEndedSpaceChangesNothingWhenItReturns() {
        var acks = AckMerger()
        acks.sent(first: 1, last: 3, epoch: 7)
        #expect(acks.received([1], epoch: 7).call != nil)
        acks.sent(first: 1, last: 3, epoch: 8)
        #expect(acks.received([1, 2], epoch: 8).call == nil)
        // The old space's call returns failed: the new space's acks leave now, and stay remembered.
        #expect(acks.callReturned(succeeded: false) == AckMerger.Call(seqs: [1, 2], epoch: 8))
        #expect(acks.received([1, 2], epoch: 8).call == nil)
    }

    @Test func callsCarryAtMostTheirLimitAndMemoryIsBounded() {
        var acks = AckMerger(maxPerCall: 4, rememberLimit: 8)
        acks.sent(first: 1, last: 1_000, epoch: 7)
        // Seq 1 is kept by the app: nothing above it lets the floor rise.
        #expect(acks.received(Array(2...3), epoch: 7).call?.seqs == [2, 3])
        #expect(acks.received(Array(4...100), epoch: 7).call == nil)
        #expect(acks.pending.count <= 16)
        var calls = 0
        while let call = acks.callReturned(succeeded: true) {
            #expect(call.seqs.count <= 4)
            calls += 1
        }
        #expect(calls <= 4)
        #expect(acks.rememberedCount <= 16)
        for seq in stride(from: UInt64(101), through: 1_000, by: 1) {
            if acks.received([seq], epoch: 7).call != nil { _ = acks.callReturned(succeeded: true) }
        }
        #expect(acks.rememberedCount <= 16)
    }
}
