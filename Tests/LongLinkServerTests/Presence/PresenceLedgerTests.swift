import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// The writer of the fleet's presence as a pure state machine: what each batch writes, and that
/// a batch never undoes a later change.
@Suite struct PresenceLedgerTests {
    private func entry(_ principal: String, _ id: UInt64) -> PresenceLedger.Entry {
        PresenceLedger.Entry(principal: PrincipalKey(principal), connectionID: id)
    }

    private func batch(_ present: [PresenceLedger.Entry], _ absent: [PresenceLedger.Entry]) -> PresenceLedger.Batch {
        PresenceLedger.Batch(present: present, absent: absent)
    }

    @Test func changesWhileABatchIsWrittenGoInTheNextOneInOrder() {
        var ledger = PresenceLedger()
        let first = ledger.began(entry("ana", 1))
        // A writer is running: the next change waits for it rather than starting another.
        let second = ledger.began(entry("ana", 2))
        #expect(first && !second)
        let written = ledger.nextBatch()
        #expect(written.map { Set($0.present) } == [entry("ana", 1), entry("ana", 2)])
        let ended = ledger.ended(entry("ana", 1))
        #expect(!ended)
        let removal = ledger.nextBatch()
        #expect(removal == batch([], [entry("ana", 1)]))
        let none = ledger.nextBatch()
        #expect(none == nil)
        // The writer stopped: the next change starts it again.
        let restarted = ledger.ended(entry("ana", 2))
        #expect(restarted)
    }

    @Test func aRenewalWritesTheLiveSessionsOnlyAndNeverBringsBackAnEndedOne() {
        var ledger = PresenceLedger()
        _ = ledger.began(entry("ana", 1))
        _ = ledger.began(entry("bo", 2))
        _ = ledger.nextBatch()
        _ = ledger.nextBatch()
        _ = ledger.ended(entry("bo", 2))
        let started = ledger.renew()
        #expect(!started)
        let renewal = ledger.nextBatch()
        #expect(renewal == batch([entry("ana", 1)], [entry("bo", 2)]))
        let none = ledger.nextBatch()
        #expect(none == nil)
    }

    @Test func aSessionThatEndsAndBeginsAgainIsWrittenPresentAndOneThatBeginsAndEndsIsRemoved() {
        var ledger = PresenceLedger()
        _ = ledger.began(entry("ana", 1))
        _ = ledger.nextBatch()
        _ = ledger.ended(entry("ana", 1))
        _ = ledger.began(entry("ana", 1))
        let again = ledger.nextBatch()
        #expect(again == batch([entry("ana", 1)], []))
        // Written, ended, began again and ended again before the next batch: removed.
        _ = ledger.ended(entry("ana", 1))
        _ = ledger.began(entry("ana", 1))
        _ = ledger.ended(entry("ana", 1))
        let gone = ledger.nextBatch()
        #expect(gone == batch([], [entry("ana", 1)]))
        // Rebound to another principal: the old one goes, the new one comes.
        _ = ledger.began(entry("ana", 1))
        _ = ledger.nextBatch()
        _ = ledger.ended(entry("ana", 1))
        _ = ledger.began(entry("bo", 1))
        let rebound = ledger.nextBatch()
        #expect(rebound == batch([entry("bo", 1)], [entry("ana", 1)]))
    }

    @Test func aHaltedLedgerWritesNothingMore() {
        var ledger = PresenceLedger()
        _ = ledger.began(entry("ana", 1))
        ledger.halt()
        let pending = ledger.nextBatch()
        let ended = ledger.ended(entry("ana", 1))
        let renewed = ledger.renew()
        let began = ledger.began(entry("bo", 2))
        let later = ledger.nextBatch()
        #expect(pending == nil && later == nil)
        #expect(!ended && !renewed && !began)
    }
}
