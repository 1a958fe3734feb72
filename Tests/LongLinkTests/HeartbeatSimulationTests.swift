import Testing

@_spi(Benchmarks) @testable import LongLink

/// The day `longlink-bench heartbeat` reports, checked against the targets.
@Suite("Heartbeat simulation")
struct HeartbeatSimulationTests {
    @Test("a day behind a 300 s NAT: at least 5x fewer pings than the fixed default, no silent loss")
    func aDayBehindACarrierNAT() {
        let simulation = HeartbeatSimulation(natTimeout: .seconds(300))
        let fixed = simulation.fixed(.seconds(15))
        let adaptive = simulation.adaptive(AdaptiveHeartbeat())
        #expect(fixed.silentLosses == 0)
        #expect(adaptive.pings * 5 <= fixed.pings, "adaptive \(adaptive.pings), fixed \(fixed.pings)")
        #expect(adaptive.silentLosses == 0)
        #expect(adaptive.probeLosses == 1)
        #expect(adaptive.finalInterval < .seconds(300) * 8 / 9)
        #expect(adaptive.finalInterval >= .seconds(300) * 8 / 9 - AdaptiveHeartbeat().step)
    }

    @Test("a fixed interval longer than the NAT's timeout loses the link every time")
    func fixedTooLongLosesSilently() {
        let outcome = HeartbeatSimulation(natTimeout: .seconds(10), span: .seconds(3_600)).fixed(.seconds(15))
        #expect(outcome.silentLosses == outcome.pings)
    }
}
