import LongLinkTestSupport
import Testing

@testable import LongLinkServer

@Suite("Reliable push window bookkeeping", .sharedMachine)
struct ReliablePushWindowTests {
    @Test("room shrinks with what is sent and grows with acks of what was sent")
    func acksFreeRoom() {
        var window = ReliablePushWindow(size: 4)
        #expect(window.room == 4)
        window.pumpStarted()
        window.sent(count: 4, lastSeq: 4)
        #expect(window.room == 0)
        window.filled()
        // Seqs 0 and 9 (never sent) free nothing; 1 and 2 free two, and the full window pumps again.
        let pumpAgain = window.acknowledged([0, 9, 1, 2])
        #expect(pumpAgain)
        #expect(window.room == 2)
        #expect(window.lastSentSeq == 4)
    }

    @Test("acks never open the window beyond its size")
    func acksAreClamped() {
        var window = ReliablePushWindow(size: 2)
        window.sent(count: 1, lastSeq: 1)
        _ = window.acknowledged([1, 1, 1])
        #expect(window.outstanding == 0)
        #expect(window.room == 2)
        // Nothing outstanding: an ack changes nothing and asks for no pump.
        let pumpAgain = window.acknowledged([1])
        #expect(!pumpAgain)
    }

    @Test("an ack while the window is not full asks for no pump")
    func noPumpUnlessFull() {
        var window = ReliablePushWindow(size: 4)
        window.sent(count: 2, lastSeq: 2)
        let pumpAgain = window.acknowledged([1])
        #expect(!pumpAgain)
    }

    @Test("the window timer reopens a full window nobody acknowledges, and waits again for one that does")
    func theTimer() {
        var window = ReliablePushWindow(size: 2)
        window.sent(count: 2, lastSeq: 2)
        window.filled()
        window.timerArmed()
        #expect(window.timerFired() == .reopen)
        #expect(window.room == 2)

        window.sent(count: 2, lastSeq: 4)
        window.filled()
        window.timerArmed()
        _ = window.acknowledged([3])
        #expect(window.timerFired() == .rearm)

        var notFull = ReliablePushWindow(size: 2)
        notFull.timerArmed()
        #expect(notFull.timerFired() == .none)
    }

    @Test("a restart forgets what was outstanding")
    func restart() {
        var window = ReliablePushWindow(size: 2)
        window.sent(count: 2, lastSeq: 7)
        window.filled()
        window.restart()
        #expect(window.room == 2)
        #expect(window.lastSentSeq == 0)
        #expect(!window.isFull)
    }
}
