import LongLinkCore
import LongLinkTestSupport
import Testing

@testable import LongLinkTransport

/// ``OneShot``: one value, from any thread, to one waiting task.
@Suite(.sharedMachine) struct OneShotTests {
    @Test func aValueResumedBeforeOrAfterTheWaitArrivesOnceAndLaterResumesAreRefused() async {
        let early = OneShot<Int>()
        #expect(!early.isResolved)
        #expect(early.resume(1))
        #expect(!early.resume(2))
        #expect(early.isResolved)
        #expect(await early.value() == 1)

        let late = OneShot<Int>()
        let loop = EventLoop(name: "one-shot")
        defer { loop.shutdown() }
        loop.scheduleTimer(after: .milliseconds(20)) { late.resume(3) }
        #expect(await late.value() == 3)
        #expect(!late.resume(4))
    }

    /// Values built on another thread and read by the waiting task, many times over: the handoff
    /// must order the builder's writes before the task's reads on every interleaving, including a
    /// resume that lands while the task is still on its way to suspending, which a resumer spinning
    /// for work hits often (CI runs this under ThreadSanitizer, which reports any read it does not
    /// see ordered).
    @Test func valuesBuiltOnAnotherThreadAreSeenWhole() async {
        let rounds = 3_000
        let offered = Locked<OneShot<[UInt64]>?>(nil)
        let loop = EventLoop(name: "one-shot-handoff")
        defer { loop.shutdown() }
        loop.execute {
            var round = 0
            while round < rounds {
                guard let shot = offered.withLock({ shot in defer { shot = nil }; return shot }) else { continue }
                // A spread of short delays, so some resumes land in each phase of the wait.
                var spin = 0
                while spin < (round % 97) * 20 { spin += 1 }
                shot.resume((0..<8).map { UInt64(round) &* 8 &+ $0 })
                round += 1
            }
        }
        var mismatches = 0
        for round in 0..<rounds {
            let shot = OneShot<[UInt64]>()
            offered.withLock { $0 = shot }
            let values = await shot.value()
            if values != (0..<8).map({ UInt64(round) &* 8 &+ $0 }) { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }
}
