import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkServer

/// The `Sync` gate as a plain value, on a manual clock: one replay at a time, one begun per
/// interval, the `Sync`s in between coalesced into one, and none for a `Sync` that nothing sent
/// since the last replay could have prompted.
@Suite("Sync gate", .sharedMachine)
struct SyncGateTests {
    @Test("the first Sync replays at once")
    func firstSyncReplays() {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        #expect(gate.syncReceived(at: clock.now) == .replay)
        #expect(gate.isReplaying)
        #expect(gate.lastStart == clock.now)
    }

    @Test("Syncs while a replay runs start none: one replay follows when it catches up")
    func syncsDuringAReplayCoalesce() async {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        let start = clock.now
        #expect(gate.syncReceived(at: start) == .replay)
        gate.pushesSent()
        for _ in 0..<20 { #expect(gate.syncReceived(at: clock.now) == .none) }
        #expect(gate.isPending)
        // The replay takes longer than the interval: the next begins as soon as it catches up.
        await clock.advance(by: .milliseconds(1_500))
        #expect(gate.replayCaughtUp(at: clock.now) == .replay)
        #expect(!gate.isPending)
        #expect(gate.lastStart == clock.now)
        // That one brings everything the twenty asked for: nothing more is pending.
        gate.pushesSent()
        await clock.advance(by: .seconds(2))
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
    }

    @Test("Syncs inside the interval are coalesced into one replay at its end")
    func syncsInsideTheIntervalWaitForItsEnd() async {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        let start = clock.now
        #expect(gate.syncReceived(at: start) == .replay)
        gate.pushesSent()
        await clock.advance(by: .milliseconds(100))
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
        #expect(!gate.isReplaying)
        // The first Sync after it arms the timer; the others wait for the same timer.
        #expect(gate.syncReceived(at: clock.now) == .armTimer(at: start.advanced(by: .seconds(1))))
        for _ in 0..<19 { #expect(gate.syncReceived(at: clock.now) == .none) }
        await clock.advance(by: .milliseconds(900))
        #expect(gate.timerFired(at: clock.now) == .replay)
        #expect(gate.lastStart == start.advanced(by: .seconds(1)))
        // A Sync once the interval has passed and the replay caught up replays at once.
        gate.pushesSent()
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
        await clock.advance(by: .seconds(1))
        #expect(gate.syncReceived(at: clock.now) == .replay)
    }

    @Test("a Sync with nothing sent since the last replay began is answered by nothing")
    func syncWithNothingSentIsDropped() async {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        #expect(gate.syncReceived(at: clock.now) == .replay)
        // While the replay runs and has sent nothing yet, it covers this Sync.
        #expect(gate.syncReceived(at: clock.now) == .none)
        #expect(!gate.isPending)
        // An empty backlog: the replay catches up having sent nothing; Syncs after it cost nothing,
        // however late they come.
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
        await clock.advance(by: .seconds(10))
        #expect(gate.syncReceived(at: clock.now) == .none)
        #expect(!gate.isPending)
        // A live push went out: the next Sync may concern it.
        gate.pushesSent()
        #expect(gate.syncReceived(at: clock.now) == .replay)
    }

    @Test("a replay the server begins itself takes the pending Sync's place")
    func serverReplayClearsThePendingSync() async {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        #expect(gate.syncReceived(at: clock.now) == .replay)
        gate.pushesSent()
        _ = gate.replayCaughtUp(at: clock.now)
        guard case .armTimer = gate.syncReceived(at: clock.now) else {
            Issue.record("expected the timer")
            return
        }
        gate.replayStarted(at: clock.now)
        #expect(!gate.isPending)
        await clock.advance(by: .seconds(1))
        #expect(gate.timerFired(at: clock.now) == .none)
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
    }

    @Test("a new principal's first Sync replays at once")
    func principalChangeResets() {
        let clock = ManualClock()
        var gate = SyncGate(interval: .seconds(1))
        #expect(gate.syncReceived(at: clock.now) == .replay)
        gate.pushesSent()
        _ = gate.replayCaughtUp(at: clock.now)
        guard case .armTimer = gate.syncReceived(at: clock.now) else {
            Issue.record("expected the timer")
            return
        }
        gate.principalChanged()
        #expect(!gate.isPending && !gate.isTimerArmed && gate.lastStart == nil)
        #expect(gate.syncReceived(at: clock.now) == .replay)
    }

    @Test("a zero interval still coalesces Syncs during a replay")
    func zeroIntervalStillCoalesces() {
        let clock = ManualClock()
        var gate = SyncGate(interval: .zero)
        #expect(gate.syncReceived(at: clock.now) == .replay)
        gate.pushesSent()
        #expect(gate.syncReceived(at: clock.now) == .none)
        #expect(gate.syncReceived(at: clock.now) == .none)
        #expect(gate.replayCaughtUp(at: clock.now) == .replay)
        gate.pushesSent()
        #expect(gate.replayCaughtUp(at: clock.now) == .none)
        #expect(gate.syncReceived(at: clock.now) == .replay)
    }

    @Test("the interval is validated: 0 to 60 seconds")
    func intervalIsValidated() {
        var configuration = ServerConfiguration()
        #expect(configuration.syncReplayInterval == .seconds(1))
        configuration.syncReplayInterval = .milliseconds(-1)
        #expect(throws: LongLinkError.self) { try configuration.validate() }
        configuration.syncReplayInterval = .seconds(61)
        #expect(throws: LongLinkError.self) { try configuration.validate() }
        configuration.syncReplayInterval = .zero
        #expect(throws: Never.self) { try configuration.validate() }
    }
}
