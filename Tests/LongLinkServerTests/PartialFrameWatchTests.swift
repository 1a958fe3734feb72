import LongLinkTestSupport
import Testing

@testable import LongLinkServer

@Suite("Partial frame watch", .sharedMachine)
struct PartialFrameWatchTests {
    @Test func armsOnceAndClosesWhenTheSameFrameIsStillIncomplete() {
        var watch = PartialFrameWatch()
        let r1 = watch.read(pendingBytes: 0, consumed: 0)
        #expect(!r1)
        let r2 = watch.read(pendingBytes: 3, consumed: 10)
        #expect(r2)
        // More bytes of the same frame: the timer is not moved.
        let r3 = watch.read(pendingBytes: 9, consumed: 10)
        #expect(!r3)
        let r4 = watch.fired(pendingBytes: 9, consumed: 10, readingPaused: false)
        #expect(r4 == .close)
    }

    @Test func progressOrAPauseOfTheServersOwnEarnsAnotherPeriod() {
        var watch = PartialFrameWatch()
        let r5 = watch.read(pendingBytes: 3, consumed: 10)
        #expect(r5)
        // Frames completed since: the next incomplete one gets a fresh period.
        let r6 = watch.fired(pendingBytes: 2, consumed: 50, readingPaused: false)
        #expect(r6 == .rearm)
        // The server stopped reading (the client does not read its replies): not the client's fault.
        let r7 = watch.fired(pendingBytes: 2, consumed: 50, readingPaused: true)
        #expect(r7 == .rearm)
        let r8 = watch.fired(pendingBytes: 2, consumed: 50, readingPaused: false)
        #expect(r8 == .close)
    }

    @Test func nothingPendingStopsTheTimer() {
        var watch = PartialFrameWatch()
        let r9 = watch.read(pendingBytes: 3, consumed: 10)
        #expect(r9)
        let r10 = watch.fired(pendingBytes: 0, consumed: 13, readingPaused: false)
        #expect(r10 == .none)
        #expect(watch.watchedOffset == nil)
        let r11 = watch.fired(pendingBytes: 0, consumed: 13, readingPaused: false)
        #expect(r11 == .none)
        let r12 = watch.read(pendingBytes: 1, consumed: 13)
        #expect(r12)
    }
}
