import Testing

@testable import LongLinkTesting

/// The NAT's bookkeeping, driven directly with instants: no socket, no waiting.
@Suite("NATMapping")
struct NATMappingTests {
    private let start = ContinuousClock.now

    private func at(_ milliseconds: Int) -> ContinuousClock.Instant {
        start + .milliseconds(milliseconds)
    }

    @Test("traffic in the idle period pushes the forgetting back; silence past the timeout forgets")
    func trafficRefreshesTheMapping() {
        var nat = NATMapping()
        #expect(!nat.isActive)
        #expect(nat.configure(.milliseconds(100), onForgotten: .drop, now: at(0)) == at(100))
        #expect(nat.isActive)
        #expect(nat.traffic(now: at(60)) == .forward)
        #expect(nat.timerFired(now: at(100)) == .wait(until: at(160)))
        #expect(nat.traffic(now: at(150)) == .forward)
        #expect(nat.timerFired(now: at(160)) == .wait(until: at(250)))
        #expect(nat.timerFired(now: at(250)) == .forget)
        #expect(nat.isForgotten)
        #expect(nat.traffic(now: at(260)) == .discard)
        #expect(nat.timerFired(now: at(400)) == .nothing)
    }

    @Test("a forgotten mapping stays forgotten, as it was forgotten")
    func forgottenForGood() {
        var nat = NATMapping()
        _ = nat.configure(.milliseconds(50), onForgotten: .reset, now: at(0))
        #expect(nat.timerFired(now: at(50)) == .forget)
        #expect(nat.traffic(now: at(60)) == .discardAndReset)
        #expect(nat.configure(nil, onForgotten: .drop, now: at(70)) == nil)
        #expect(nat.isActive)
        #expect(nat.traffic(now: at(80)) == .discardAndReset)
    }

    @Test("turned off, the NAT forgets nothing; turned on again, it counts from then")
    func offAndOnAgain() {
        var nat = NATMapping()
        _ = nat.configure(.milliseconds(100), onForgotten: .drop, now: at(0))
        #expect(nat.configure(nil, onForgotten: .drop, now: at(50)) == nil)
        #expect(!nat.isActive)
        #expect(nat.timerFired(now: at(500)) == .nothing)
        #expect(nat.traffic(now: at(600)) == .forward)
        #expect(nat.configure(.milliseconds(100), onForgotten: .drop, now: at(1_000)) == at(1_100))
        // A new timeout keeps the idle time counted so far.
        #expect(nat.configure(.milliseconds(300), onForgotten: .drop, now: at(1_050)) == at(1_300))
        #expect(nat.timerFired(now: at(1_299)) == .wait(until: at(1_300)))
        #expect(nat.timerFired(now: at(1_300)) == .forget)
    }
}
