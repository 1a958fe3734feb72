import Foundation
import LongLinkTesting
import Testing

@testable import LongLink

/// The adaptive heartbeat's learner driven directly on a manual clock, against a simulated NAT that
/// forgets a mapping idle for its timeout: no socket, no waiting.
@Suite("Heartbeat learner")
struct HeartbeatLearnerTests {
    /// One idle link: every interval either survives (shorter than the NAT's timeout) or dies. Runs
    /// `intervals` intervals and returns how many links died.
    @discardableResult
    static func idle(
        _ learner: inout HeartbeatLearner, on network: NetworkKey = .cellular, nat: Duration,
        clock: ManualClock, intervals: Int
    ) async -> Int {
        var deaths = 0
        for _ in 0..<intervals {
            let interval = learner.interval(for: network)
            await clock.advance(by: interval)
            if interval < nat {
                _ = learner.survived(interval, on: network, at: clock.now)
            } else {
                deaths += 1
                _ = learner.idleLinkDied(interval, on: network, at: clock.now)
            }
        }
        return deaths
    }

    @Test("converges to the longest interval below the NAT's timeout, finding the limit with one failed probe")
    func convergesBelowTheNAT() async {
        let clock = ManualClock()
        let parameters = AdaptiveHeartbeat()
        var learner = HeartbeatLearner(parameters: parameters)
        // 15 s, 45 s, ... 285 s survive; 315 s is the probe that finds the 300 s limit. Ten steps of three
        // intervals each, and one more for the failed probe: well within 40 intervals.
        let deaths = await Self.idle(&learner, nat: .seconds(300), clock: clock, intervals: 40)
        #expect(learner.interval(for: .cellular) == .seconds(285))
        #expect(!learner.isProbing(.cellular))
        #expect(deaths == 1)
        // And it stays there: a day more of idle intervals loses nothing.
        let later = await Self.idle(&learner, nat: .seconds(300), clock: clock, intervals: 200)
        #expect(later == 0)
        #expect(learner.interval(for: .cellular) == .seconds(285))
    }

    @Test("a probe that dies steps back to the last interval that survived and keeps it as stable")
    func stepsBackOnFailure() {
        let now = ContinuousClock.now
        var learner = HeartbeatLearner(parameters: AdaptiveHeartbeat(start: .seconds(10), step: .seconds(10)))
        for _ in 0..<2 { #expect(learner.survived(.seconds(10), on: .wifi, at: now) == nil) }
        #expect(learner.survived(.seconds(10), on: .wifi, at: now) == .seconds(20))
        #expect(learner.isProbing(.wifi))
        #expect(learner.idleLinkDied(.seconds(20), on: .wifi, at: now) == .seconds(10))
        #expect(!learner.isProbing(.wifi))
        // Stable: successes no longer step up before the re-probe time.
        for _ in 0..<10 { #expect(learner.survived(.seconds(10), on: .wifi, at: now) == nil) }
        // A report about an interval no longer in force counts for nothing.
        #expect(learner.idleLinkDied(.seconds(20), on: .wifi, at: now) == nil)
        #expect(learner.interval(for: .wifi) == .seconds(10))
    }

    @Test("a stable interval that keeps failing steps down, never below the start")
    func stableFailuresStepDown() {
        let now = ContinuousClock.now
        var learner = HeartbeatLearner(parameters: AdaptiveHeartbeat(start: .seconds(10), step: .seconds(10)))
        for interval in [10, 20] {
            for _ in 0..<3 { _ = learner.survived(.seconds(interval), on: .wifi, at: now) }
        }
        #expect(learner.idleLinkDied(.seconds(30), on: .wifi, at: now) == .seconds(20))
        #expect(learner.idleLinkDied(.seconds(20), on: .wifi, at: now) == nil)
        #expect(learner.idleLinkDied(.seconds(20), on: .wifi, at: now) == .seconds(10))
        #expect(learner.idleLinkDied(.seconds(10), on: .wifi, at: now) == nil)
        #expect(learner.idleLinkDied(.seconds(10), on: .wifi, at: now) == nil)
        #expect(learner.interval(for: .wifi) == .seconds(10))
    }

    @Test("networks are learned apart")
    func keepsNetworksApart() async {
        let clock = ManualClock()
        var learner = HeartbeatLearner(parameters: AdaptiveHeartbeat())
        await Self.idle(&learner, on: .wifi, nat: .seconds(60), clock: clock, intervals: 30)
        await Self.idle(&learner, on: .cellular, nat: .seconds(300), clock: clock, intervals: 40)
        #expect(learner.interval(for: .wifi) == .seconds(45))
        #expect(learner.interval(for: .cellular) == .seconds(285))
        #expect(learner.interval(for: .named("office")) == .seconds(15))
        // A network's name is kept to 128 bytes.
        #expect(NetworkKey.named(String(repeating: "é", count: 100)).rawValue.utf8.count == "name:".count + 128)
        #expect(NetworkKey.named("a" + String(repeating: "é", count: 100)).rawValue.utf8.count == "name:".count + 127)
    }

    @Test("a stable interval is probed higher again after the re-probe time, and finds a laxer NAT")
    func reprobesAfterTheConfiguredTime() async {
        let clock = ManualClock()
        let parameters = AdaptiveHeartbeat(reprobeAfter: .seconds(3_600))
        var learner = HeartbeatLearner(parameters: parameters)
        await Self.idle(&learner, nat: .seconds(100), clock: clock, intervals: 20)
        #expect(learner.interval(for: .cellular) == .seconds(75))
        #expect(!learner.isProbing(.cellular))
        // Within the hour: stays. The NAT is replaced by a laxer one meanwhile.
        let within = await Self.idle(&learner, nat: .seconds(200), clock: clock, intervals: 30)
        #expect(within == 0)
        #expect(learner.interval(for: .cellular) == .seconds(75))
        // Past the hour, the next interval survived starts a probe, which now finds 195 s.
        await clock.advance(by: .seconds(3_600))
        await Self.idle(&learner, nat: .seconds(200), clock: clock, intervals: 20)
        #expect(learner.interval(for: .cellular) == .seconds(195))
        #expect(!learner.isProbing(.cellular))
    }

    @Test("the networks kept are bounded: the least recently used is forgotten")
    func boundsTheNetworksKept() {
        let now = ContinuousClock.now
        var learner = HeartbeatLearner(parameters: AdaptiveHeartbeat(successesBeforeStep: 1, maxNetworks: 3))
        for name in ["a", "b", "c"] { _ = learner.survived(.seconds(15), on: .named(name), at: now) }
        _ = learner.survived(.seconds(45), on: .named("a"), at: now)
        _ = learner.survived(.seconds(15), on: .named("d"), at: now)
        #expect(learner.records.count == 3)
        #expect(learner.records[.named("b")] == nil)
        #expect(learner.interval(for: .named("a")) == .seconds(75))
    }

    @Test("the file store round-trips what was learned, the stable time included")
    func fileStoreRoundTrips() async throws {
        let path = NSTemporaryDirectory() + "heartbeat-\(UInt64.random(in: 0...UInt64.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = FileHeartbeatStore(path: path)
        let clock = ManualClock()
        let parameters = AdaptiveHeartbeat(reprobeAfter: .seconds(7_200))
        var learner = HeartbeatLearner(parameters: parameters)
        await Self.idle(&learner, on: .wifi, nat: .seconds(60), clock: clock, intervals: 30)
        await Self.idle(&learner, on: .cellular, nat: .seconds(300), clock: clock, intervals: 12)
        let wallNow = Date()
        try store.save(learner.snapshot(now: clock.now, wallNow: wallNow))

        // A launch 30 minutes later, on another clock.
        let (restored, outcome) = HeartbeatLearner.restoring(
            parameters, from: store, now: ContinuousClock.now, wallNow: wallNow.addingTimeInterval(1_800))
        #expect(outcome == .restored(2))
        #expect(restored.interval(for: .wifi) == .seconds(45))
        #expect(!restored.isProbing(.wifi))
        #expect(restored.interval(for: .cellular) == learner.interval(for: .cellular))
        #expect(restored.isProbing(.cellular) == learner.isProbing(.cellular))
        // Wi-Fi was found stable 1,755 s before the save, and the launch is 1,800 s later: the re-probe comes
        // 3,645 s into the new launch, not 7,200 s.
        var relaunched = restored
        let start = ContinuousClock.now
        #expect(relaunched.survived(.seconds(45), on: .wifi, at: start.advanced(by: .seconds(1_500))) == nil)
        #expect(relaunched.survived(.seconds(45), on: .wifi, at: start.advanced(by: .seconds(3_700))) == .seconds(75))
    }

    @Test("a corrupt or missing file is a typed outcome and a fresh start, not a crash")
    func corruptFileIsIgnored() throws {
        let path = NSTemporaryDirectory() + "heartbeat-\(UInt64.random(in: 0...UInt64.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = FileHeartbeatStore(path: path)
        let parameters = AdaptiveHeartbeat()
        let (_, missing) = HeartbeatLearner.restoring(parameters, from: store, now: .now, wallNow: Date())
        #expect(missing == .empty)

        try Data("{\"version\": 1, \"networks\": [{\"key\": ".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: HeartbeatStoreError.self) { try store.load() }
        let (learner, outcome) = HeartbeatLearner.restoring(parameters, from: store, now: .now, wallNow: Date())
        guard case .ignored(let error) = outcome else {
            Issue.record("expected the file to be ignored, got \(outcome)")
            return
        }
        #expect(error.kind == .corrupt)
        #expect(learner.records.isEmpty)
        #expect(learner.interval(for: .wifi) == parameters.start)

        // A file over 1 MiB is not read: corrupt too.
        try Data(repeating: 0x20, count: (1 << 20) + 1).write(to: URL(fileURLWithPath: path))
        #expect(throws: HeartbeatStoreError(.corrupt, "\(path) is \((1 << 20) + 1) bytes, over \(1 << 20)")) {
            try store.load()
        }

        // Values out of the parameters' range are brought within them.
        let wild = HeartbeatSnapshot(networks: [
            .init(key: .wifi, intervalMilliseconds: 86_400_000, survivedMilliseconds: -5, stableSince: nil)
        ])
        try store.save(wild)
        let (bounded, _) = HeartbeatLearner.restoring(parameters, from: store, now: .now, wallNow: Date())
        #expect(bounded.interval(for: .wifi) == parameters.maximum)
    }
}
