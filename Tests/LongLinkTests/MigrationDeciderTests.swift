import LongLinkTestSupport
import Testing

@testable import LongLink

/// The hysteresis of live migration, with time passed in.
@Suite("Migration decider", .sharedMachine)
struct MigrationDeciderTests {
    let target = Endpoint.tcp(host: "better", port: 1)
    let another = Endpoint.tcp(host: "another", port: 1)
    let start = ContinuousClock.now

    private var policy: Balancing.Migration {
        var policy = Balancing.Migration()
        policy.improvement = 0.7
        policy.sustain = .seconds(60)
        policy.minimumProbes = 3
        policy.minimumInterval = .seconds(300)
        policy.jitter = 0.2
        return policy
    }

    private func at(_ seconds: Int) -> ContinuousClock.Instant { start.advanced(by: .seconds(seconds)) }

    /// Better by more than 30% in every probe over a minute: move; not before the minute is over.
    @Test func aClearlyBetterEndpointThatStaysBetterIsATarget() {
        var decider = MigrationDecider(policy: policy)
        for second in stride(from: 0, to: 60, by: 20) {
            #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(second)) == nil)
        }
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(60)) == target)
    }

    /// 0.75x is not clearly better; one probe that is not better starts the streak over.
    @Test func aSmallOrBrokenImprovementIsNotAMove() {
        var decider = MigrationDecider(policy: policy)
        for second in stride(from: 0, through: 120, by: 20) {
            #expect(decider.observe(currentCost: 1.0, best: (target, 0.75), at: at(second)) == nil)
        }
        for second in stride(from: 0, through: 40, by: 20) {
            _ = decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(200 + second))
        }
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.9), at: at(250)) == nil)
        // The streak restarted: 60 s more are needed.
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(260)) == nil)
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(300)) == nil)
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(320)) == target)
    }

    /// A different best endpoint starts its own streak.
    @Test func theStreakBelongsToOneEndpoint() {
        var decider = MigrationDecider(policy: policy)
        _ = decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(0))
        _ = decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(30))
        _ = decider.observe(currentCost: 1.0, best: (another, 0.4), at: at(60))
        #expect(decider.observe(currentCost: 1.0, best: (another, 0.4), at: at(90)) == nil)
        #expect(decider.observe(currentCost: 1.0, best: (another, 0.4), at: at(120)) == another)
    }

    /// After a move, the next waits for the minimum interval plus up to 20% of jitter.
    @Test func movesAreSpacedByTheMinimumIntervalWithJitter() {
        var decider = MigrationDecider(policy: policy)
        decider.moved(at: at(0), random: 0.5)
        // Allowed from 300 * 1.1 = 330 s.
        for second in stride(from: 200, through: 320, by: 20) {
            #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(second)) == nil)
        }
        #expect(decider.observe(currentCost: 1.0, best: (target, 0.5), at: at(340)) == target)
    }
}
