import LongLink

/// `longlink-bench peers`: LongLink beside core NATS in the same run, alternating, on one machine
/// and loopback: best-effort pushes against NATS pub/sub (32-byte messages, one publisher, one
/// subscriber, the consumer's delivered rate while the producer outruns it on both sides), and rpc
/// in the default design against NATS request-reply at 1, 64 and 1,024 in flight (an echo
/// responder on a connection of its own). Optional: without NATS and Go it prints what to install
/// and measures nothing.
///
/// LongLink's figures come from the `pushes` and `rpc` scenarios' own measurements; with one
/// request in flight both sides time every round trip (for the p50), so that row's rate is that
/// loop's.
enum PeersBenchmark {
    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let payload = PushBenchmark.payload.count
        let levels = RPCBenchmark.inFlightLevels
        let figures = try await NATSPeer.with(notes: &report.notes) { nats in
            try await withBenchServer { server in
                try await withBenchClient(port: server.port) { bench in
                    var pushes: [PushBenchmark.Measured] = []
                    var unconflated: [PushBenchmark.Measured] = []
                    var pubSub: [NATSPeer.Measured] = []
                    var ours: [Int: [Double]] = [:]
                    var theirs: [Int: [Double]] = [:]
                    var p50s: (ours: [Double], theirs: [Double]) = ([], [])
                    for run in 1...settings.runs {
                        let of = "run \(run)/\(settings.runs)"
                        benchProgress("peers: best-effort pushes, \(of)")
                        pushes.append(
                            try await PushBenchmark.longLink(
                                server: server, principal: "peers-\(run)", reliable: false, pushBufferLimit: nil,
                                settings: settings))
                        benchProgress("peers: best-effort pushes, conflation off, \(of)")
                        unconflated.append(
                            try await PushBenchmark.longLink(
                                server: server, principal: "peers-unconflated-\(run)", reliable: false,
                                pushBufferLimit: nil, settings: settings, conflation: .disabled))
                        benchProgress("peers: NATS pub/sub, \(of)")
                        pubSub.append(try await nats.pubSub(size: payload, settings))
                        for inFlight in levels {
                            benchProgress("peers: rpc, \(inFlight) in flight, \(of)")
                            if inFlight == 1 {
                                let latencies = try await RPCBenchmark.latencies(bench.client, settings: settings)
                                ours[1, default: []].append(Double(latencies.count) / settings.duration.inSeconds)
                                p50s.ours.append(BenchStats.percentile(latencies, 0.5))
                            } else {
                                ours[inFlight, default: []].append(
                                    try await RPCBenchmark.throughput(
                                        bench.client, inFlight: inFlight, settings: settings))
                            }
                            benchProgress("peers: NATS request-reply, \(inFlight) in flight, \(of)")
                            let measured = try await nats.requestReply(
                                inFlight: inFlight, size: benchPayload.count, settings)
                            theirs[inFlight, default: []].append(measured.rate)
                            if let p50 = measured.p50 { p50s.theirs.append(p50) }
                        }
                    }
                    var figures = [
                        BenchFigure(
                            key: "peers.nats.pubsub",
                            label: "best-effort pushes, \(payload) B, against NATS pub/sub", unit: "msg/s",
                            samples: pushes.map(\.rate), baselineSamples: pubSub.map(\.rate),
                            note: "delivered to one consumer; baseline: one NATS publisher and one subscriber on one "
                                + "subject, each on a connection of its own; per run NATS's subscriber dropped "
                                + pubSub.map { String($0.dropped) }.joined(separator: "/") + ", our client conflated "
                                + pushes.map { String($0.conflated) }.joined(separator: "/")),
                        BenchFigure(
                            key: "peers.nats.pubsub.unconflated",
                            label: "best-effort pushes, \(payload) B, conflation off, against NATS pub/sub",
                            unit: "msg/s", samples: unconflated.map(\.rate), baselineSamples: pubSub.map(\.rate),
                            target: .ratioAtLeast(1.0, ">= 1.0x NATS"),
                            note: "PushConflation.disabled: the push buffer (10,000) drops the newest once full; "
                                + "per run our client read "
                                + unconflated.map { String($0.received) }.joined(separator: "/")),
                    ]
                    for inFlight in levels {
                        figures.append(
                            BenchFigure(
                                key: "peers.nats.request_reply.in_flight_\(inFlight)",
                                label: "rpc, \(inFlight) in flight, default, against NATS request-reply",
                                unit: "req/s", samples: ours[inFlight] ?? [], baselineSamples: theirs[inFlight],
                                note: "baseline: nats.go Request from \(inFlight) goroutine(s) on one connection, "
                                    + "an echo responder on another"))
                    }
                    figures.append(
                        BenchFigure(
                            key: "peers.nats.request_reply.p50",
                            label: "rpc round trip p50, 1 in flight, against NATS request-reply", unit: "µs",
                            samples: p50s.ours, baselineSamples: p50s.theirs,
                            note: "lower is better: a ratio under 1 means LongLink's round trip is shorter"))
                    return figures
                }
            }
        }
        for figure in figures ?? [] { report.add(figure) }
        if figures != nil {
            report.notes.append(
                "peers: NATS is a nats-server of this run's own (nats-server -a 127.0.0.1 -p PORT, default "
                    + "configuration); nats-peer built from Benchmarks/Peers/nats/main.go; LongLink's server has one "
                    + "event loop, its client the default configuration; ratios are LongLink / NATS")
        }
    }
}
