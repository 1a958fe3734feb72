import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Push de-duplication", .sharedMachine)
struct PushDeduplicatorTests {
    /// A hostile or confused server's first push carries the largest seq: the pushes after it are
    /// still delivered (none is taken for a repeat, acked and dropped).
    @Test func aHugeFirstSeqHidesNoLaterPush() {
        var deduplicator = PushDeduplicator()
        deduplicator.markDelivered(.max)
        for seq in UInt64(1)...100 {
            #expect(!deduplicator.wasDelivered(seq))
            deduplicator.markDelivered(seq)
        }
        #expect(deduplicator.wasDelivered(.max) && deduplicator.wasDelivered(50))
    }

    /// Seqs at the top of the range, delivered out of order past the bound: nothing traps, the
    /// lowest runs are forgotten first, and the rest join into one run ending at 2^64-1.
    @Test func seqsAtTheTopOfTheRangeDoNotTrap() {
        var deduplicator = PushDeduplicator(capacity: 2)
        deduplicator.markDelivered(1)
        for seq: UInt64 in [.max, .max - 2, .max - 4, .max - 1, .max - 3] { deduplicator.markDelivered(seq) }
        #expect(deduplicator.runCount == 1)
        #expect(deduplicator.wasDelivered(.max) && deduplicator.wasDelivered(.max - 3))
        #expect(!deduplicator.wasDelivered(.max - 4) && !deduplicator.wasDelivered(1) && !deduplicator.wasDelivered(2))
    }

    /// Random deliveries against a set: past its bound the deduplicator forgets (a repeat would be
    /// delivered again), but it never reports as delivered a seq that was not, and it stays bounded.
    @Test(arguments: [1 as UInt64, 2, 3])
    func forgetsRatherThanLoses(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var deduplicator = PushDeduplicator(capacity: 16)
        var delivered = Set<UInt64>()
        var next: UInt64 = 1
        for _ in 0..<20_000 {
            // Mostly in order, sometimes skipping ahead or filling an old gap.
            let seq: UInt64
            switch random.next(below: 10) {
            case 0: seq = next + UInt64(random.next(below: 50))
            case 1: seq = UInt64(random.next(below: Int(next)) + 1)
            default: seq = next
            }
            let inOrder = seq == next
            next = max(next, seq + 1)
            deduplicator.markDelivered(seq)
            delivered.insert(seq)
            let probe = UInt64(random.next(below: Int(next) + 10))
            if deduplicator.wasDelivered(probe) {
                let reallyDelivered = delivered.contains(probe)
                #expect(reallyDelivered, "seq \(probe) reads as delivered but never was")
            }
            // The newest run is never the one forgotten.
            if inOrder { #expect(deduplicator.wasDelivered(seq)) }
            #expect(deduplicator.runCount <= 16)
        }
    }
}
