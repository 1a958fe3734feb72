import Foundation
import LongLinkTestSupport
import Testing

@testable import LongLink

/// The scorer, the ranking and the ban, as plain values with time passed in.
@Suite("Endpoint table", .sharedMachine)
struct EndpointTableTests {
    let near = Endpoint.tcp(host: "near.example", port: 1)
    let far = Endpoint.tcp(host: "far.example", port: 1)
    let other = Endpoint.tcp(host: "other.example", port: 1)
    let start = ContinuousClock.now

    private func table(_ endpoints: [Endpoint], _ configure: (inout Balancing) -> Void = { _ in }) -> EndpointTable {
        var policy = Balancing()
        configure(&policy)
        return EndpointTable(policy: policy, endpoints: endpoints)
    }

    @Test func theCostIsTheRoundTripInflatedByTheLoad() {
        #expect(Balancing.cost(roundTrip: .milliseconds(10), load: 0) == 0.010)
        #expect(abs(Balancing.cost(roundTrip: .milliseconds(10), load: 0.5) - 0.020) < 1e-12)
        // Capped at 0.95: a full server costs twenty round trips, never infinity.
        #expect(abs(Balancing.cost(roundTrip: .milliseconds(10), load: 1) - 0.200) < 1e-12)
        #expect(abs(Balancing.cost(roundTrip: .milliseconds(10), load: 7) - 0.200) < 1e-12)
    }

    /// The peak EWMA takes a worse sample at once and forgets it over the decay time.
    @Test func theRoundTripEstimateRisesAtOnceAndDecaysSlowly() {
        var estimate = PeakEWMA(decay: .seconds(10))
        estimate.add(.milliseconds(10), at: start)
        estimate.add(.milliseconds(100), at: start.advanced(by: .seconds(1)))
        #expect(estimate.estimate == 0.100)
        // One decay time later a good sample pulls it only part of the way back (e^-1 keeps 37%).
        estimate.add(.milliseconds(10), at: start.advanced(by: .seconds(11)))
        let expected = 0.100 * exp(-1.0) + 0.010 * (1 - exp(-1.0))
        #expect(abs(estimate.estimate! - expected) < 1e-9)
        // Long after, it is back near the good samples.
        estimate.add(.milliseconds(10), at: start.advanced(by: .seconds(200)))
        #expect(abs(estimate.estimate! - 0.010) < 1e-6)
    }

    /// A near server at 90% load costs 10 ms / 0.1 = 100 ms; a far idle one 60 ms: the far one wins.
    @Test func aFarButIdleServerBeatsANearButJammedOne() {
        var table = table([near, far])
        table.recordRoundTrip(near, .milliseconds(10), at: start)
        table.recordLoad(near, permille: 900, at: start)
        table.recordRoundTrip(far, .milliseconds(60), at: start)
        table.recordLoad(far, permille: 0, at: start)
        var random = SplitMix64(seed: 1)
        #expect(table.ranking(at: start, using: &random) == [far, near])
        #expect(abs(table.cost(near, at: start) - 0.100) < 1e-9)
    }

    @Test func aStaleLoadReportIsIgnored() {
        var table = table([near, far]) { $0.loadStaleAfter = .seconds(60) }
        table.recordRoundTrip(near, .milliseconds(10), at: start)
        table.recordLoad(near, permille: 900, at: start)
        table.recordRoundTrip(far, .milliseconds(60), at: start)
        var random = SplitMix64(seed: 1)
        #expect(table.ranking(at: start.advanced(by: .seconds(59)), using: &random).first == far)
        #expect(table.load(near, at: start.advanced(by: .seconds(61))) == 0)
        #expect(table.ranking(at: start.advanced(by: .seconds(61)), using: &random).first == near)
    }

    /// An endpoint never measured counts the probe timeout: any that answered comes first.
    @Test func anUnmeasuredEndpointComesAfterMeasuredOnes() {
        var table = table([other, far])
        table.recordRoundTrip(far, .milliseconds(500), at: start)
        var random = SplitMix64(seed: 3)
        #expect(table.ranking(at: start, using: &random) == [far, other])
    }

    /// Within the tolerance band the choice is the better of two random picks: over many clients
    /// the load spreads over the equally good servers, and the clearly worse one is never first.
    @Test func equallyGoodEndpointsShareTheClientsAndAWorseOneGetsNone() {
        let a = Endpoint.tcp(host: "a", port: 1)
        let b = Endpoint.tcp(host: "b", port: 1)
        let c = Endpoint.tcp(host: "c", port: 1)
        let bad = Endpoint.tcp(host: "bad", port: 1)
        var table = table([a, b, c, bad]) { $0.tolerance = 1.5 }
        table.recordRoundTrip(a, .milliseconds(10), at: start)
        table.recordRoundTrip(b, .milliseconds(11), at: start)
        table.recordRoundTrip(c, .milliseconds(12), at: start)
        table.recordRoundTrip(bad, .milliseconds(40), at: start)
        var random = SplitMix64(seed: 7)
        var firsts: [Endpoint: Int] = [:]
        for _ in 0..<3_000 {
            let ranking = table.ranking(at: start, using: &random)
            #expect(ranking.count == 4 && Set(ranking).count == 4)
            firsts[ranking[0], default: 0] += 1
        }
        #expect(firsts[bad] == nil)
        // Better of two among three: the best is chosen 2/3 of the time, the middle 1/3, the worst never.
        #expect((1_850...2_150).contains(firsts[a] ?? 0))
        #expect((850...1_150).contains(firsts[b] ?? 0))
        #expect(firsts[c] == nil)
    }

    /// Three failures in a row ban an endpoint for 5 s, the next for 10 s, then 20 s, up to the
    /// cap; a success forgives everything.
    @Test func repeatedFailuresBanForAGrowingPeriod() {
        var table = table([near, far]) {
            $0.banAfterFailures = 3
            $0.banInitial = .seconds(5)
            $0.banMaximum = .seconds(15)
        }
        table.recordRoundTrip(near, .milliseconds(1), at: start)
        table.recordRoundTrip(far, .milliseconds(50), at: start)
        var random = SplitMix64(seed: 1)
        table.recordFailure(near, at: start)
        table.recordFailure(near, at: start)
        #expect(!table.isBanned(near, at: start))
        #expect(table.ranking(at: start, using: &random).first == near)
        table.recordFailure(near, at: start)
        #expect(table.isBanned(near, at: start.advanced(by: .milliseconds(4_999))))
        #expect(!table.isBanned(near, at: start.advanced(by: .seconds(5))))
        // Banned: not retried first on every reconnect; not in the ranking at all.
        #expect(table.ranking(at: start.advanced(by: .seconds(1)), using: &random) == [far])
        let later = start.advanced(by: .seconds(6))
        table.recordFailure(near, at: later)
        #expect(table.isBanned(near, at: later.advanced(by: .milliseconds(9_999))))
        #expect(!table.isBanned(near, at: later.advanced(by: .seconds(10))))
        table.recordFailure(near, at: later)
        // 20 s would exceed the 15 s cap.
        #expect(!table.isBanned(near, at: later.advanced(by: .seconds(15))))
        table.recordSuccess(near)
        #expect(!table.isBanned(near, at: later))
        #expect(table.ranking(at: later, using: &random).first == near)
    }

    /// When every endpoint is banned, the one whose ban ends first is tried alone, and the table
    /// says every endpoint failed (the provider is asked again).
    @Test func whenAllAreBannedTheFirstToBeFreedIsTried() {
        var table = table([near, far]) { $0.banAfterFailures = 1 }
        table.recordFailure(far, at: start)
        table.recordFailure(near, at: start.advanced(by: .seconds(1)))
        var random = SplitMix64(seed: 1)
        #expect(table.allFailed(at: start.advanced(by: .seconds(1))))
        #expect(table.ranking(at: start.advanced(by: .seconds(2)), using: &random) == [far])
    }

    /// A new list keeps what is known of the endpoints that stay and forgets the others.
    @Test func aNewListKeepsTheHealthOfEndpointsThatStay() {
        var table = table([near, far])
        table.recordRoundTrip(near, .milliseconds(3), at: start)
        table.recordRoundTrip(far, .milliseconds(9), at: start)
        table.replace([far, other, far])
        #expect(table.endpoints == [far, other])
        #expect(table[far]?.roundTrip.estimate == 0.009)
        #expect(table[near] == nil)
        #expect(table[other]?.roundTrip.estimate == nil)
    }

    @Test func anImpossiblePolicyIsRefusedByName() {
        var policy = Balancing()
        policy.tolerance = 0.5
        #expect(throws: LongLinkError.self) { try policy.validate() }
        policy = Balancing()
        policy.migration.improvement = 1.2
        do {
            try policy.validate()
            Issue.record("expected a refusal")
        } catch {
            #expect(error.code == .invalidConfiguration && error.message.contains("improvement"))
        }
    }
}
