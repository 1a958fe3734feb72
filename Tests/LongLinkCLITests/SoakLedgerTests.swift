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

    /// The requests in flight while a primary failed over (from its kill until its replica
    /// served) are counted, answered or failed, whichever ended before the kill returned; those
    /// started after the replica served, or ended before the kill, are not.
    @Test func requestsAcrossAFailoverAreCounted() {
        var ledger = SoakLedger(hangAfter: .seconds(15), recoveryStart: .seconds(100))
        let away = LongLinkError(code: .unavailable, message: "the window could not be reached")
        ledger.started(1, at: .seconds(1))
        ledger.finished(1, at: .seconds(2), elapsed: .seconds(1), error: nil, runs: 1)
        ledger.started(2, at: .seconds(9))
        ledger.started(3, at: .seconds(11))
        ledger.started(4, at: .seconds(12))
        ledger.faultInjected(at: .seconds(10))
        ledger.primaryKilling(at: .seconds(10))
        ledger.finished(2, at: .seconds(13), elapsed: .seconds(4), error: nil, runs: 1)
        ledger.finished(3, at: .seconds(14), elapsed: .seconds(3), error: away, runs: 0)
        // The replica served at 13.5 s; the kill returned at 20 s (the killed node back).
        ledger.started(5, at: .seconds(15))
        ledger.finished(5, at: .seconds(16), elapsed: .seconds(1), error: nil, runs: 1)
        ledger.primaryKilled(at: .seconds(10), took: .milliseconds(3_500), now: .seconds(20))
        ledger.finished(4, at: .seconds(21), elapsed: .seconds(9), error: nil, runs: 1)
        ledger.started(6, at: .seconds(22))
        ledger.finished(6, at: .seconds(23), elapsed: .seconds(1), error: away, runs: 0)
        #expect(ledger.primariesKilled == 1)
        #expect(ledger.failovers.requests == 3)
        #expect(ledger.failovers.answered == 2)
        #expect(ledger.failovers.failed == 1)
        // A kill that failed ends its failover when it returns, and is not a kill.
        ledger.started(7, at: .seconds(30))
        ledger.primaryKilling(at: .seconds(31))
        ledger.finished(7, at: .seconds(32), elapsed: .seconds(2), error: away, runs: 0)
        ledger.primaryKilled(at: .seconds(31), took: nil, now: .seconds(40))
        #expect(ledger.primariesKilled == 1)
        #expect(ledger.failovers.requests == 4 && ledger.failovers.failed == 2)
    }
}
