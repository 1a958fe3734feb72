import Foundation

/// `longlink-bench ticks`: prices as a trading app sees them when the feed outruns it. A feed of
/// 5,000 symbols (``TicksFeed``: Zipf-skewed, 200,000 updates/s) goes best-effort from a
/// LongLink server to a `LongLinkClient` whose consumer spends a fixed time per tick; beside it,
/// in the same run and alternating, the same feed through nats-server to a nats.go subscriber
/// spending the same time per message (Benchmarks/Peers/nats/main.go, `-mode ticks`).
///
/// The app subscribes with `pushes(matching: "ticks.*")`, a topic per symbol, conflated by topic
/// (the default): what an app writes when the server publishes per symbol, as a NATS app
/// subscribes to `ticks.*`; no key closure to run per push.
enum TicksBenchmark {
    /// `--tick-work`, `--tick-rate`.
    struct Options: Sendable {
        /// The consumer's busy time per tick.
        var work = Duration.microseconds(20)
        /// Updates per second the producer aims at.
        var rate = TicksFeed.rate
    }

    static func run(_ settings: BenchSettings, _ options: Options, into report: inout BenchReport) async throws {
        var ours: [Measured] = []
        var theirs: [NATSPeer.TicksMeasured] = []
        let measured: Void? = try await NATSPeer.with(notes: &report.notes) { nats in
            for run in 1...settings.runs {
                benchProgress("ticks: LongLink, run \(run)/\(settings.runs)")
                ours.append(try await longLink(run: run, options, settings))
                benchProgress("ticks: NATS, run \(run)/\(settings.runs)")
                theirs.append(try await nats.ticks(options, settings))
            }
        }
        if measured == nil {
            for run in 1...settings.runs {
                benchProgress("ticks: LongLink, run \(run)/\(settings.runs)")
                ours.append(try await longLink(run: run, options, settings))
            }
        }
        for figure in figures(ours, theirs.isEmpty ? nil : theirs, seconds: settings.duration.inSeconds) {
            report.add(figure)
        }
        let work = Int(options.work.inMicroseconds)
        report.notes.append(
            "ticks: \(TicksFeed.symbols) symbols, Zipf exponent \(TicksFeed.exponent), seed \(TicksFeed.seed), "
                + "aiming at \(Int(options.rate)) updates/s of \(TicksFeed.payloadSize) B (stamp, symbol, update "
                + "number) on ticks.S0000…; the consumer spins \(work) µs per tick (at most "
                + "\(1_000_000 / max(1, work)) ticks/s); LongLink: the producer on the server's loop "
                + "(pushBestEffort), the app on pushes(matching: \"ticks.*\"), conflated by topic; NATS: a nats.go "
                + "publisher and a subscriber on ticks.* (default pending limits: 524,288 messages, 64 MiB) on connections "
                + "of their own, in one process; ages from the producer's wall-clock stamp; a symbol is starved "
                + "when it owed a newer price for more than \(TicksOutcome.starvationBound / 1_000_000) ms")
    }

    private static func figures(_ ours: [Measured], _ theirs: [NATSPeer.TicksMeasured]?, seconds: Double)
        -> [BenchFigure]
    {
        func row(
            _ key: String, _ label: String, _ unit: String, _ value: (Measured) -> Double,
            _ baseline: ((NATSPeer.TicksMeasured) -> Double)?, target: BenchTarget? = nil, note: String? = nil
        ) -> BenchFigure {
            let baselineSamples = baseline.flatMap { baseline in theirs.map { $0.map(baseline) } }
            return BenchFigure(
                key: "ticks.\(key)", label: label, unit: unit, samples: ours.map(value),
                baselineSamples: baselineSamples, target: target, note: note)
        }
        func runs<T>(_ values: [T]?) -> String { (values ?? []).map { "\($0)" }.joined(separator: "/") }
        return [
            row(
                "produced", "ticks produced, against NATS's publisher", "upd/s", \.producedRate, \.producedRate),
            row(
                "age.p50", "tick age when taken p50, against NATS", "ms", { $0.outcome.ageP50 / 1e3 },
                { $0.ageP50 / 1e3 }),
            row(
                "age.p99", "tick age when taken p99, against NATS", "ms", { $0.outcome.ageP99 / 1e3 },
                { $0.ageP99 / 1e3 }, target: .ratioAtMost(1, "below NATS's")),
            row(
                "age.max", "tick age when taken max, against NATS", "ms", { $0.outcome.ageMax / 1e3 },
                { $0.ageMax / 1e3 }),
            row(
                "starved", "symbols starved, against NATS", "symbols", { Double($0.outcome.starved) },
                { Double($0.starved) }, target: .atMost(0, "none"),
                note: "per run, the longest gap (ms) LongLink "
                    + runs(ours.map { BenchReport.number($0.outcome.longestGap) })
                    + (theirs == nil ? "" : ", NATS " + runs(theirs?.map { BenchReport.number($0.longestGap) }))
                    + "; the consumer's longest pause between two takes (ms) LongLink "
                    + runs(ours.map { BenchReport.number($0.outcome.longestPause) })
                    + (theirs == nil ? "" : ", NATS " + runs(theirs?.map { BenchReport.number($0.longestPause) }))),
            row(
                "taken", "ticks taken, against NATS", "ticks/s", { Double($0.outcome.taken) / seconds },
                { Double($0.taken) / seconds }, note: "in the measured window"),
            row(
                "conflated", "ticks conflated (LongLink) / dropped (NATS)", "ticks", { Double($0.conflated) },
                { Double($0.dropped) },
                note: "over the whole feed; LongLink per run: client read " + runs(ours.map(\.received))
                    + ", dropped by the client " + runs(ours.map(\.clientDropped)) + ", by the server "
                    + runs(ours.map(\.serverDropped))
                    + (theirs == nil ? "" : "; NATS slow-consumer errors " + runs(theirs?.map(\.slowConsumers)))),
            row(
                "cpu.server", "server CPU, against nats-server", "cores", \.serverCPU, \.serverCPU,
                note: "LongLink: the server's loop, the producer included; LongLink's whole process (getrusage) "
                    + runs(ours.map { BenchReport.number($0.processCPU) }) + " cores"),
            row(
                "cpu.client", "client CPU, against nats.go", "cores", \.clientCPU, \.clientCPU,
                note: "the consumer's spin included; LongLink's loop alone (reading, decoding, conflating) "
                    + runs(ours.map { BenchReport.number($0.clientLoopCPU) })
                    + " cores; the app waiting for a push "
                    + runs(ours.map { String(format: "%.0f %%", $0.appWaiting * 100) })
                    + " of the feed; NATS: the Go process less the publisher's own thread (its connection's "
                    + "flusher stays in)"),
            row(
                "disconnections", "disconnections, against NATS", "links", { Double($0.disconnections) },
                { Double($0.disconnections) }, target: .atMost(0, "none")),
        ]
    }
}
