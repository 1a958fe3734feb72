import LongLink

/// `longlink-bench rpc`: request/response on one connection, LongLink against the bare baseline
/// client, measured alternately in the same run against the same server.
///
/// Throughput with 1, 64 and 1,024 requests in flight: that many caller tasks, each awaiting
/// `client.request("echo")` in a loop. Latency: one caller, one request at a time, every round trip
/// recorded (p50, p99, p99.9). The caller tasks run on the global executor, as an app's would; the
/// "callers on the client's loop" rows run them with the client's event loop as their task executor
/// preference, which shows what the hops between the global executor and the loop cost.
enum RPCBenchmark {
    static let inFlightLevels = [1, 64, 1_024]

    /// Requests per second with `inFlight` callers looping on `echo`.
    static func throughput(
        _ client: LongLinkClient, inFlight: Int, settings: BenchSettings, executor: (any TaskExecutor)? = nil
    ) async throws -> Double {
        try await measure(client, inFlight: inFlight, settings: settings, executor: executor).rate
    }

    /// ``throughput(_:inFlight:settings:executor:)`` with the process's CPU time per request.
    static func measure(
        _ client: LongLinkClient, inFlight: Int, settings: BenchSettings, executor: (any TaskExecutor)? = nil
    ) async throws -> ThroughputSample {
        let counter = BenchCounter()
        let tallies = BenchTallies(count: inFlight)
        return try await withThrowingTaskGroup(of: Void.self, returning: ThroughputSample.self) { group in
            for index in 0..<inFlight {
                let tally = tallies.tallies[index]
                // `addTask(executorPreference: nil)` is not the same as `addTask`: in the full
                // scenario its children carried a task-executor preference, and every resume then
                // took the task's status lock to look it up (`getPreferredTaskExecutor`, 14% of the
                // callers' threads in perf against 2% with plain `addTask`).
                let caller: @Sendable () async throws -> Void = {
                    // Its own payload, as an app's freshly encoded request would be: one shared
                    // array's reference count is another line both cores write for every request.
                    let payload = Array(benchPayload)
                    while !counter.isStopped {
                        _ = try await client.request("echo", payload: payload)
                        tally.add()
                    }
                }
                if let executor {
                    group.addTask(executorPreference: executor, operation: caller)
                } else {
                    group.addTask(operation: caller)
                }
            }
            let clock = ContinuousClock()
            try await Task.sleep(for: settings.warmUp)
            let probe = CrossCoreProbe.start()
            defer { probe?.requestStop() }
            let startRoles = ProcessUsage.cpuTimeByRole()
            let (startCount, startTime, startCPU) = (tallies.value, clock.now, ProcessUsage.cpuTime())
            try await Task.sleep(for: settings.duration)
            let (endCount, endTime, endCPU) = (tallies.value, clock.now, ProcessUsage.cpuTime())
            let cpuByRole = ProcessUsage.cpuTimeByRole(since: startRoles)
            let probes = await probe?.stop() ?? []
            counter.stop()
            try await group.waitForAll()
            var sample = ThroughputSample(
                requests: endCount - startCount, elapsed: endTime - startTime, cpu: endCPU - startCPU,
                cpuByRole: cpuByRole)
            sample.crossCoreProbes = probes
            return sample
        }
    }

    /// `--in-flight N`: throughput at one level, baseline and both deadline designs alternating.
    static func runOneLevel(_ inFlight: Int, _ settings: BenchSettings, into report: inout BenchReport) async throws {
        var samples: [String: [Double]] = [:]
        var placements: [ThroughputSample] = []
        try await withBenchServer { server in
            try await withBenchClient(port: server.port, configure: { $0.deadlineStrategy = .deadlineHeap }) { heap in
                try await withBenchClient(port: server.port, configure: { $0.deadlineStrategy = .taskGroup }) { group in
                    for run in 1...settings.runs {
                        benchProgress("rpc: \(inFlight) in flight, run \(run)/\(settings.runs)")
                        var measured: [(String, ThroughputSample)] = []
                        for design in RPCDesign.allCases where settings.onlyDesign.map({ $0 == design }) ?? true {
                            let sample =
                                switch design {
                                case .baseline:
                                    try await BaselineBenchmark.measure(
                                        port: server.port, inFlight: inFlight, settings: settings)
                                case .heap: try await measure(heap.client, inFlight: inFlight, settings: settings)
                                case .group: try await measure(group.client, inFlight: inFlight, settings: settings)
                                case .loop:
                                    try await measure(
                                        heap.client, inFlight: inFlight, settings: settings, executor: heap.loop)
                                }
                            measured.append((design.rawValue, sample))
                        }
                        if let heap = measured.first(where: { $0.0 == "heap" })?.1, heap.farShare != nil {
                            placements.append(heap)
                        }
                        for (design, sample) in measured {
                            samples[design, default: []].append(sample.rate)
                            samples[design + ".cpu", default: []].append(sample.cpuMicrosecondsPerRequest)
                            for (role, value) in sample.cpuByRole {
                                samples[design + ".cpu." + role.rawValue, default: []].append(value)
                            }
                        }
                    }
                }
            }
        }
        report.add(
            throughputFigure(
                inFlight: inFlight, taskGroup: false, samples: samples["heap"] ?? [], baseline: samples["baseline"],
                target: nil))
        report.add(
            throughputFigure(
                inFlight: inFlight, taskGroup: true, samples: samples["group"] ?? [], baseline: samples["baseline"],
                target: nil))
        if !placements.isEmpty { report.add(placementFigure(inFlight: inFlight, placements)) }
        report.add(
            BenchFigure(
                key: "rpc.on_loop.in_flight_\(inFlight).throughput",
                label: "rpc throughput, \(inFlight) in flight, callers on the client's loop", unit: "req/s",
                samples: samples["loop"] ?? [], baselineSamples: samples["baseline"]))
        for (design, name) in [
            ("heap", ""), ("group", ", task-group race"), ("loop", ", callers on the client's loop"),
        ] {
            report.add(
                BenchFigure(
                    key: "rpc.\(RPCDesign(rawValue: design)?.key ?? design).in_flight_\(inFlight).cpu_per_request",
                    label: "rpc CPU per request (server + client), \(inFlight) in flight\(name)", unit: "µs",
                    samples: samples[design + ".cpu"] ?? [], baselineSamples: samples["baseline.cpu"],
                    note: design == "heap"
                        ? "whole-process CPU time (all threads: server, client, callers) over the measured window, per request; the baseline column is the same for the bare client"
                        : nil))
        }
        // Where LongLink's CPU goes, by thread. Baseline column: the same server loop serving the
        // bare client, and the bare client's one thread against LongLink's client loop.
        let baselineRole: [ProcessUsage.ThreadRole: ProcessUsage.ThreadRole] = [
            .serverLoop: .serverLoop, .clientLoop: .bareClient,
        ]
        for role in [ProcessUsage.ThreadRole.serverLoop, .clientLoop, .callers] {
            guard let values = samples["heap.cpu." + role.rawValue], !values.isEmpty else { continue }
            report.add(
                BenchFigure(
                    key: "rpc.heap.in_flight_\(inFlight).cpu_per_request.\(role)",
                    label: "rpc CPU per request, \(inFlight) in flight, \(role.rawValue)", unit: "µs",
                    samples: values,
                    baselineSamples: baselineRole[role].flatMap { samples["baseline.cpu." + $0.rawValue] },
                    note: role == .serverLoop
                        ? "per-thread CPU time from /proc (schedstat) over the same window; callers' threads are the global executor's; the client loop's baseline is the bare client's one thread"
                        : nil))
        }
    }

    /// The throughput row for one in-flight level and deadline design (the same key and label in
    /// every mode, so that runs compare).
    static func throughputFigure(
        inFlight: Int, taskGroup: Bool, samples: [Double], baseline: [Double]?, target: BenchTarget?
    ) -> BenchFigure {
        BenchFigure(
            key: "rpc.\(taskGroup ? "default" : "heap").in_flight_\(inFlight).throughput",
            label: "rpc throughput, \(inFlight) in flight" + (taskGroup ? ", task-group race" : ""), unit: "req/s",
            samples: samples, baselineSamples: baseline, target: target)
    }

    /// The share of cross-core probes that found the far placement in each run at `inFlight`,
    /// with each run's rate (see ``CrossCoreProbe``).
    static func placementFigure(inFlight: Int, _ runs: [ThroughputSample]) -> BenchFigure {
        let perRun = runs.map { run in
            "\(Int((run.rate / 1_000).rounded()))k (\(Int(((run.farShare ?? 0) * 100).rounded()))% far)"
        }
        let probes = runs.flatMap(\.crossCoreProbes).sorted()
        let near = probes.filter { $0 < CrossCoreProbe.farThresholdNanoseconds }
        let far = probes.filter { $0 >= CrossCoreProbe.farThresholdNanoseconds }
        func median(_ values: [Double]) -> String { values.isEmpty ? "none" : "\(Int(BenchStats.median(values))) ns" }
        return BenchFigure(
            key: "machine.far_placement_share.rpc_in_flight_\(inFlight)",
            label: "share of the \(inFlight)-in-flight window with the vCPUs far apart", unit: "%",
            samples: runs.map { ($0.farShare ?? 0) * 100 },
            note: "every 250 ms of each window, two threads pinned to CPUs 0 and 1 pass a cache line back and "
                + "forth; a round trip from \(Int(CrossCoreProbe.farThresholdNanoseconds)) ns counts as far "
                + "(median near \(median(near)), far \(median(far))). Runs: \(perRun.joined(separator: ", "))")
    }

    /// The issue's throughput targets: at least half the baseline at 64 and 1,024 in flight, and
    /// 600,000 req/s at 1,024.
    static func throughputTarget(inFlight: Int) -> BenchTarget? {
        switch inFlight {
        case 64: .ratioAtLeast(0.5, ">= 50% of baseline")
        case 1_024: .all(.ratioAtLeast(0.5, ">= 50% of baseline"), .atLeast(600_000, ">= 600,000 req/s"))
        default: nil
        }
    }

    /// Round trips in microseconds, sorted, one request at a time.
    static func latencies(
        _ client: LongLinkClient, settings: BenchSettings, executor: (any TaskExecutor)? = nil
    ) async throws -> [Double] {
        try await withTaskExecutorPreference(executor) {
            var samples: [Double] = []
            samples.reserveCapacity(200_000)
            let clock = ContinuousClock()
            let measureFrom = clock.now.advanced(by: settings.warmUp)
            let measureUntil = measureFrom.advanced(by: settings.duration)
            while true {
                let sent = clock.now
                guard sent < measureUntil else { break }
                _ = try await client.request("echo", payload: benchPayload)
                if sent >= measureFrom { samples.append((clock.now - sent).inMicroseconds) }
            }
            return samples.sorted()
        }
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        if let only = settings.onlyInFlight {
            try await runOneLevel(only, settings, into: &report)
            return
        }
        let runs = settings.runs
        let figures = try await withBenchServer { server in
            try await withBenchClient(port: server.port, configure: { $0.deadlineStrategy = .deadlineHeap }) { bench in
                let client = bench.client
                let loop = bench.loop
                var baseline: [Int: [Double]] = [:]
                var longLink: [Int: [Double]] = [:]
                var onLoop: [Double] = []
                var placements: [ThroughputSample] = []
                let fractions = [0.5, 0.99, 0.999]
                var baselineLatency: [[Double]] = [[], [], []]
                var longLinkLatency: [[Double]] = [[], [], []]
                var onLoopLatency: [[Double]] = [[], [], []]
                for run in 1...runs {
                    for inFlight in inFlightLevels {
                        benchProgress("rpc: \(inFlight) in flight, run \(run)/\(runs): baseline")
                        baseline[inFlight, default: []].append(
                            try await BaselineBenchmark.throughput(
                                port: server.port, inFlight: inFlight, settings: settings))
                        benchProgress("rpc: \(inFlight) in flight, run \(run)/\(runs): LongLink")
                        let sample = try await measure(client, inFlight: inFlight, settings: settings)
                        longLink[inFlight, default: []].append(sample.rate)
                        if inFlight == 1_024, sample.farShare != nil { placements.append(sample) }
                    }
                    benchProgress("rpc: 64 in flight, callers on the client's loop, run \(run)/\(runs)")
                    onLoop.append(try await throughput(client, inFlight: 64, settings: settings, executor: loop))
                    benchProgress("rpc: latency, run \(run)/\(runs): baseline")
                    let bare = try await BaselineBenchmark.latencies(port: server.port, settings: settings)
                    benchProgress("rpc: latency, run \(run)/\(runs): LongLink")
                    let ours = try await latencies(client, settings: settings)
                    benchProgress("rpc: latency, callers on the client's loop, run \(run)/\(runs)")
                    let ourOnLoop = try await latencies(client, settings: settings, executor: loop)
                    for (index, fraction) in fractions.enumerated() {
                        baselineLatency[index].append(BenchStats.percentile(bare, fraction))
                        longLinkLatency[index].append(BenchStats.percentile(ours, fraction))
                        onLoopLatency[index].append(BenchStats.percentile(ourOnLoop, fraction))
                    }
                }
                var figures: [BenchFigure] = []
                for inFlight in inFlightLevels {
                    figures.append(
                        throughputFigure(
                            inFlight: inFlight, taskGroup: false, samples: longLink[inFlight] ?? [],
                            baseline: baseline[inFlight], target: throughputTarget(inFlight: inFlight)))
                }
                if !placements.isEmpty { figures.append(placementFigure(inFlight: 1_024, placements)) }
                figures.append(
                    BenchFigure(
                        key: "rpc.on_loop.in_flight_64.throughput",
                        label: "rpc throughput, 64 in flight, callers on the client's loop", unit: "req/s",
                        samples: onLoop, baselineSamples: baseline[64]))
                for (index, name) in ["p50", "p99", "p999"].enumerated() {
                    figures.append(
                        BenchFigure(
                            key: "rpc.heap.latency_\(name)", label: "rpc latency \(name), 1 in flight", unit: "µs",
                            samples: longLinkLatency[index], baselineSamples: baselineLatency[index],
                            target: name == "p50" ? .ratioAtMost(1.5, "<= 1.5x baseline") : nil))
                }
                for (index, name) in ["p50", "p99"].enumerated() {
                    figures.append(
                        BenchFigure(
                            key: "rpc.on_loop.latency_\(name)",
                            label: "rpc latency \(name), 1 in flight, caller on the client's loop", unit: "µs",
                            samples: onLoopLatency[index], baselineSamples: baselineLatency[index]))
                }
                return figures
            }
        }
        for figure in figures { report.add(figure) }
        // The same measurements with the card's task-group race, side by side with the default deadline heap.
        let taskGroupFigures = try await withBenchServer { server in
            try await withBenchClient(port: server.port, configure: { $0.deadlineStrategy = .taskGroup }) { bench in
                var samples: [Int: [Double]] = [:]
                var baseline: [Int: [Double]] = [:]
                var p50: [Double] = []
                var baselineP50: [Double] = []
                for run in 1...runs {
                    for inFlight in inFlightLevels {
                        benchProgress("rpc (task group): \(inFlight) in flight, run \(run)/\(runs)")
                        baseline[inFlight, default: []].append(
                            try await BaselineBenchmark.throughput(
                                port: server.port, inFlight: inFlight, settings: settings))
                        samples[inFlight, default: []].append(
                            try await throughput(bench.client, inFlight: inFlight, settings: settings))
                    }
                    baselineP50.append(
                        BenchStats.percentile(
                            try await BaselineBenchmark.latencies(port: server.port, settings: settings), 0.5))
                    p50.append(BenchStats.percentile(try await latencies(bench.client, settings: settings), 0.5))
                }
                var figures = inFlightLevels.map { inFlight in
                    throughputFigure(
                        inFlight: inFlight, taskGroup: true, samples: samples[inFlight] ?? [],
                        baseline: baseline[inFlight], target: throughputTarget(inFlight: inFlight))
                }
                figures.append(
                    BenchFigure(
                        key: "rpc.default.latency_p50", label: "rpc latency p50, 1 in flight, task-group race",
                        unit: "µs", samples: p50, baselineSamples: baselineP50,
                        target: .ratioAtMost(1.5, "<= 1.5x baseline")))
                return figures
            }
        }
        for figure in taskGroupFigures { report.add(figure) }
        try await RedisPing.compareRPC(settings, into: &report)
        report.notes.append(
            "rpc: one server (1 event loop, default configuration: de-duplication on), one LongLinkClient (its own "
                + "event loop), \(benchPayload.count)-byte echo payloads; baseline = blocking socket on a plain "
                + "thread, same frames, same timeout_ms; baseline and LongLink alternate within each run.")
    }
}
