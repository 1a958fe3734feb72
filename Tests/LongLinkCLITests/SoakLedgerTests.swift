import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import longlink

@Suite("Soak ledger", .sharedMachine)
struct SoakLedgerTests {
    /// However many requests a run makes, the ledger keeps only those in flight.
    @Test func endedRequestsLeaveNothingBehind() {
        var ledger = SoakLedger(hangAfter: .seconds(4), recoveryStart: .seconds(60))
        for number in 1...10_000 {
            let time = Duration.milliseconds(100 * number)
            ledger.started(number, at: time)
            let error = number.isMultiple(of: 10) ? LongLinkError(code: .deadlineExceeded, message: "late") : nil
            ledger.finished(number, at: time + .milliseconds(5), elapsed: .milliseconds(5), error: error, runs: 1)
        }
        #expect(ledger.inFlight.count == 0)
        #expect(ledger.sent == 10_000)
        #expect(ledger.succeeded == 9_000)
        #expect(ledger.timedOut == 1_000)
        #expect(ledger.hung == 0)
        // Started at 60 s or later: request 600 (a multiple of 10) and every tenth after it.
        #expect(ledger.failuresAfterRecovery == 941)
    }

    /// A request that never returns, or returns after the hang bound, counts as hung; one answered
    /// OK whose handler never ran is counted; an unknown number changes nothing.
    @Test func hungAndUnrunRequestsAreCounted() {
        var ledger = SoakLedger(hangAfter: .seconds(4), recoveryStart: .zero)
        ledger.started(1, at: .zero)
        ledger.started(2, at: .seconds(1))
        ledger.started(3, at: .seconds(2))
        ledger.finished(2, at: .seconds(6), elapsed: .seconds(5), error: nil, runs: 1)
        ledger.finished(3, at: .seconds(3), elapsed: .seconds(1), error: nil, runs: 0)
        ledger.finished(9, at: .seconds(3), elapsed: .seconds(1), error: nil, runs: 1)
        ledger.finished(3, at: .seconds(3), elapsed: .seconds(1), error: nil, runs: 1)
        #expect(ledger.hung == 2)
        #expect(ledger.succeeded == 2)
        #expect(ledger.succeededWithoutRunning == 1)
        #expect(ledger.inFlight.keys.sorted() == [1])
    }

    /// The worst recovery is the longest wait from a fault to the next success, counted from the
    /// first of several faults before that success; a failure does not end the wait.
    @Test func worstRecoveryRunsFromTheEarliestFault() {
        var ledger = SoakLedger(hangAfter: .seconds(4), recoveryStart: .seconds(100))
        ledger.faultInjected(at: .seconds(10))
        ledger.faultInjected(at: .seconds(11))
        ledger.started(1, at: .seconds(12))
        ledger.finished(
            1, at: .seconds(13), elapsed: .seconds(1), error: LongLinkError(code: .unavailable, message: "down"),
            runs: 0)
        ledger.started(2, at: .seconds(13))
        ledger.finished(2, at: .seconds(14), elapsed: .seconds(1), error: nil, runs: 1)
        ledger.faultInjected(at: .seconds(20))
        ledger.started(3, at: .seconds(20))
        ledger.finished(3, at: .seconds(21), elapsed: .seconds(1), error: nil, runs: 1)
        #expect(ledger.faults == 3)
        #expect(ledger.worstRecovery == .seconds(4))
        #expect(ledger.failed == 1)
        #expect(ledger.failuresAfterRecovery == 0)
    }
}
