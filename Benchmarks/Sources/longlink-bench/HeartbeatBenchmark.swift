@_spi(Benchmarks) import LongLink

/// `longlink-bench heartbeat`: one idle link behind a carrier NAT that forgets a mapping after 300 s,
/// over a simulated day, with the fixed default heartbeat (15 s) and the adaptive one (its defaults).
///
/// Simulated, not measured on sockets: the adaptive heartbeat's own learner runs on virtual time
/// against a model of the NAT and of the client's heartbeat ticks (``HeartbeatSimulation``), so a day
/// takes milliseconds. The black-hole figures follow from the client's timers (stated in the notes);
/// the end-to-end tests (AdaptiveHeartbeatTests) check the same behaviour on real sockets with
/// millisecond-scale NATs.
enum HeartbeatBenchmark {
    static func run(_ settings: BenchSettings, into report: inout BenchReport) {
        benchProgress("heartbeat: a simulated day behind a 300 s NAT")
        let nat = Duration.seconds(300)
        let simulation = HeartbeatSimulation(natTimeout: nat)
        let fixedInterval = ClientConfiguration(endpoints: []).heartbeat
        let parameters = AdaptiveHeartbeat()
        let fixed = simulation.fixed(fixedInterval)
        let adaptive = simulation.adaptive(parameters)
        report.add(
            BenchFigure(
                key: "heartbeat.pings_per_day", label: "heartbeat pings in a day, adaptive vs fixed 15 s (NAT 300 s)",
                unit: "pings", samples: [Double(adaptive.pings)], baselineSamples: [Double(fixed.pings)],
                target: .ratioAtMost(0.2, "≤ 0.2x (≥ 5x fewer)")))
        report.add(
            BenchFigure(
                key: "heartbeat.silent_losses", label: "idle links lost silently in a day, adaptive (fixed: \(fixed.silentLosses))",
                unit: "links", samples: [Double(adaptive.silentLosses)], target: .atMost(0, "0")))
        report.add(
            BenchFigure(
                key: "heartbeat.probe_losses", label: "idle links lost to the probes that found the limit, adaptive",
                unit: "links", samples: [Double(adaptive.probeLosses)]))
        report.add(
            BenchFigure(
                key: "heartbeat.learned_interval", label: "interval learned, adaptive (NAT 300 s)", unit: "s",
                samples: [adaptive.finalInterval.inSeconds]))
        report.add(
            BenchFigure(
                key: "heartbeat.time_to_learn", label: "time until the learned interval is stable", unit: "min",
                samples: [(adaptive.learnedAfter ?? .seconds(86_400)).inSeconds / 60]))
        // A request written into a black hole: adaptive pings after one answer timeout of silence and
        // declares the link dead after a second (a third when an earlier answer timer was running);
        // fixed declares it dead two intervals (to 2.25 with its tick) after the last traffic received.
        let adaptiveNotice = 3 * parameters.answerTimeout.inSeconds
        let fixedNotice = 2.25 * fixedInterval.inSeconds
        report.add(
            BenchFigure(
                key: "heartbeat.black_hole_request", label: "black hole noticed after a request, worst case, adaptive vs fixed",
                unit: "s", samples: [adaptiveNotice], baselineSamples: [fixedNotice],
                target: .atMost(2 * fixedInterval.inSeconds, "≤ 2 fixed intervals (30 s)")))
        // An idle link with nothing to send notices only at its next Ping: 1.25 H plus the answer timeout.
        report.add(
            BenchFigure(
                key: "heartbeat.black_hole_idle", label: "black hole noticed on an idle link, worst case, adaptive vs fixed",
                unit: "s", samples: [1.25 * adaptive.finalInterval.inSeconds + parameters.answerTimeout.inSeconds],
                baselineSamples: [fixedNotice]))
        report.notes.append(
            "heartbeat: simulated day (the learner on virtual time, a model of the NAT and of the heartbeat ticks; no sockets); "
                + "fixed \(fixed.pings) pings, adaptive \(adaptive.pings) (proposals included), "
                + "\(String(format: "%.1f", Double(fixed.pings) / Double(max(1, adaptive.pings))))x fewer; "
                + "black-hole rows are the client's timer bounds, worst case; an idle link with nothing to send "
                + "notices only at its next Ping, later with a longer interval (the price of fewer wake-ups).")
    }
}
