import Foundation
import LongLink
import Synchronization

/// `longlink-bench timeouts`: 100,000 pending requests that share one deadline.
///
/// A child process (see ``BenchProbe``) connects to the server in this process and makes 100,000
/// calls to `never` (a handler that never answers), each with the timeout that ends at the same
/// instant, 3 s after the first call. The figures: how late after the deadline the client had
/// failed all of them (every caller's continuation resumed with the timeout), how late
/// the last and the median caller task ran after that (the executor's share: 100,000 tasks to
/// run), and the process's CPU time (getrusage) while the requests waited and while they fired.
/// Meanwhile a bare client on a connection of its own asks the server `echo` once a millisecond:
/// its longest round trip is how long the mass expiry kept the server's other connections waiting.
enum TimeoutBenchmark {
    static let count = 100_000
    static let deadlineAfter = Duration.seconds(3)
    /// How long after the deadline the probe gives up waiting for the calls to fail (an error
    /// rather than a probe that polls forever).
    static let firingBound = Duration.seconds(30)

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let runs = settings.runs
        var samples: [String: [Double]] = [:]
        try await withBenchServer { configuration in
            configuration.maxInFlightPerConnection = 1_000_000
            configuration.dedupeWindow = .zero
        } _: { server in
            for run in 1...runs {
                benchProgress("timeouts: \(count) requests with one deadline, task-group race, run \(run)/\(runs)")
                let raced = try await BenchProbe.spawn(
                    "timeouts", port: server.port, count: count,
                    extra: [
                        BenchProbe.deadlineVariable: String(Int64(deadlineAfter.inMilliseconds)),
                        BenchProbe.strategyVariable: "taskGroup",
                    ])
                samples["task_group.fired_late_ms", default: []].append(raced["fired_late_ms"] ?? .nan)
                benchProgress("timeouts: \(count) requests with one deadline, deadline heap, run \(run)/\(runs)")
                let neighbourStop = BenchCounter()
                let neighbour = Task { try await neighbourLongestRoundTrip(port: server.port, until: neighbourStop) }
                var values: [String: Double]
                do {
                    values = try await BenchProbe.spawn(
                        "timeouts", port: server.port, count: count,
                        extra: [BenchProbe.deadlineVariable: String(Int64(deadlineAfter.inMilliseconds))])
                } catch {
                    neighbourStop.stop()
                    _ = try? await neighbour.value
                    throw error
                }
                neighbourStop.stop()
                values["neighbour_longest_ms"] = try await neighbour.value
                guard values["written"] == Double(count) else {
                    throw BenchError(
                        "only \(Int(values["written"] ?? 0)) of \(count) requests were written before the deadline")
                }
                for (key, value) in values { samples[key, default: []].append(value) }
            }
        }
        let wait = BenchStats.median(samples["wait_ms"] ?? [])
        report.add(
            BenchFigure(
                key: "timeouts.fired_late",
                label: "timeouts: client has failed all \(count) calls, after the deadline by (deadline heap)",
                unit: "ms", samples: samples["fired_late_ms"] ?? [], target: .atMost(100, "<= 100 ms")))
        report.add(
            BenchFigure(
                key: "timeouts.task_group.fired_late",
                label: "timeouts: the same with the task-group race (the default)",
                unit: "ms", samples: samples["task_group.fired_late_ms"] ?? []))
        if let shares = samples["far_share"], shares.count == samples["fired_late_ms"]?.count {
            let runs = zip(samples["fired_late_ms"] ?? [], shares).map { late, share in
                "\(BenchReport.number(late)) ms (\(Int(share.rounded()))% far)"
            }
            report.add(
                BenchFigure(
                    key: "machine.far_placement_share.timeouts",
                    label: "share of the timeouts' firing with the vCPUs far apart", unit: "%", samples: shares,
                    note: "probed from 20 ms before the deadline, then every 250 ms (see the rpc row); runs: "
                        + runs.joined(separator: ", ")))
        }
        report.add(
            BenchFigure(
                key: "timeouts.neighbour_longest",
                label: "timeouts: longest echo round trip of another connection to the server meanwhile",
                unit: "ms", samples: samples["neighbour_longest_ms"] ?? [], target: .atMost(100, "<= 100 ms"),
                note:
                    "during the deadline heap's run, a bare client on a connection of its own asks `echo` once a millisecond while the probe runs "
                    + "(its 100,000 requests, their firing on both sides): how long the server's loop kept "
                    + "its other connections waiting"))
        report.add(
            BenchFigure(
                key: "timeouts.last_late", label: "timeouts: last of \(count) callers resumes after its deadline by",
                unit: "ms", samples: samples["late_max_ms"] ?? []))
        report.add(
            BenchFigure(
                key: "timeouts.median_late", label: "timeouts: median caller resumes after the deadline by", unit: "ms",
                samples: samples["late_p50_ms"] ?? []))
        report.add(
            BenchFigure(
                key: "timeouts.timed_out", label: "timeouts: calls that failed with deadline exceeded", unit: "calls",
                samples: samples["timed_out"] ?? []))
        report.add(
            BenchFigure(
                key: "timeouts.cpu_submitting", label: "timeouts: CPU time to submit \(count) requests", unit: "ms",
                samples: samples["cpu_submit_ms"] ?? []))
        report.add(
            BenchFigure(
                key: "timeouts.cpu_waiting", label: "timeouts: CPU time while \(count) requests wait", unit: "ms",
                samples: samples["cpu_wait_ms"] ?? [],
                note: "over the \(BenchReport.number(wait)) ms between the last write and the deadline"))
        report.add(
            BenchFigure(
                key: "timeouts.cpu_firing", label: "timeouts: CPU time from the deadline to the last failure",
                unit: "ms", samples: samples["cpu_fire_ms"] ?? []))
    }

    /// The longest `echo` round trip, in milliseconds, of a bare client on its own connection
    /// asking once a millisecond (on a plain thread) until `stop`.
    static func neighbourLongestRoundTrip(port: Int, until stop: BenchCounter) async throws -> Double {
        try await onPlainThread("neighbour") {
            let client = try BaselineClient(port: port)
            let clock = ContinuousClock()
            var longest = Duration.zero
            while !stop.isStopped {
                let start = clock.now
                _ = try client.call("echo", payload: benchPayload)
                longest = max(longest, clock.now - start)
                usleep(1_000)
            }
            return longest.inMilliseconds
        }
    }

    /// The child's side.
    static func probe(port: Int, count: Int, deadlineAfter: Duration) async throws -> [(String, Double)] {
        let bench = try await BenchClient.connect(port: port, configure: { $0.deadlineStrategy = BenchProbe.strategy })
        let client = bench.client
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { _ = try await client.request("echo", payload: benchPayload) } }
            try await group.waitForAll()
        }
        let clock = ContinuousClock()
        let results = Outcomes(count: count)
        let cpuStart = ProcessUsage.cpuTime()
        let deadline = clock.now.advanced(by: deadlineAfter)
        // Unstructured tasks, not a task group: consuming 100,000 children of one group costs the
        // runtime quadratic time (TaskGroup::removeChildTask walks a list), which would swamp the
        // CPU figures.
        for index in 0..<count {
            Task {
                var timedOut = false
                do {
                    _ = try await client.request("never", options: RequestOptions(timeout: deadline - clock.now))
                } catch let error as LongLinkError {
                    timedOut = error.code == .deadlineExceeded
                } catch {}
                results.record(index, late: (clock.now - deadline).inMilliseconds, timedOut: timedOut)
            }
        }
        var written = 0
        while clock.now < deadline {
            written = await client.statistics.inFlight
            if written >= count { break }
            try? await Task.sleep(for: .milliseconds(10))
        }
        let writtenAt = clock.now
        let cpuWritten = ProcessUsage.cpuTime()
        // The vCPUs' placement (see ``CrossCoreProbe``): probed just before the deadline and then
        // every 250 ms until every caller ran.
        try? await Task.sleep(until: deadline.advanced(by: .milliseconds(-20)), clock: clock)
        let placement = CrossCoreProbe.start()
        defer { placement?.requestStop() }
        try? await Task.sleep(until: deadline, clock: clock)
        let cpuDeadline = ProcessUsage.cpuTime()
        // When the client has failed every call (each caller's continuation resumed with the
        // timeout, by its own deadline or by the server's reply): the firing itself, before the
        // executor has run the resumed callers. Polled from the client's own loop: a poller on the
        // global executor would wait in line behind the resumed callers and measure them instead.
        let firedLate = try await Task(executorPreference: bench.loop) {
            while true {
                let statistics = await client.statistics
                if statistics.inFlight == 0, statistics.queued == 0 { break }
                guard clock.now - deadline < Self.firingBound else {
                    throw BenchError(
                        "\(statistics.inFlight) calls still pending \(Self.firingBound) after the deadline")
                }
                try? await Task.sleep(for: .milliseconds(1))
            }
            return (clock.now - deadline).inMilliseconds
        }.value
        while !results.isComplete {
            guard clock.now - deadline < Self.firingBound else {
                throw BenchError("not every caller ran \(Self.firingBound) after the deadline")
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
        let cpuEnd = ProcessUsage.cpuTime()
        let probes = await placement?.stop() ?? []
        let (unsorted, timedOut) = results.snapshot()
        let lateness = unsorted.sorted()
        return [
            ("written", Double(written)),
            ("timed_out", Double(timedOut)),
            ("wait_ms", (deadline - writtenAt).inMilliseconds),
            ("late_p50_ms", BenchStats.percentile(lateness, 0.5)),
            ("late_p99_ms", BenchStats.percentile(lateness, 0.99)),
            ("late_max_ms", lateness.last ?? .nan),
            ("fired_late_ms", firedLate),
            ("cpu_submit_ms", (cpuWritten - cpuStart).inMilliseconds),
            ("cpu_wait_ms", (cpuDeadline - cpuWritten).inMilliseconds),
            ("cpu_fire_ms", (cpuEnd - cpuDeadline).inMilliseconds),
        ] + (CrossCoreProbe.farShare(of: probes).map { [("far_share", $0 * 100)] } ?? [])
    }

    /// When each caller resumed, and how it failed.
    private final class Outcomes: Sendable {
        private struct State {
            var late: [Double]
            var timedOut = 0
            var recorded = 0
        }

        private let state: Mutex<State>
        private let count: Int

        init(count: Int) {
            self.count = count
            state = Mutex(State(late: [Double](repeating: .nan, count: count)))
        }

        func record(_ index: Int, late: Double, timedOut: Bool) {
            state.withLock { state in
                state.late[index] = late
                state.recorded += 1
                if timedOut { state.timedOut += 1 }
            }
        }

        var isComplete: Bool { state.withLock { $0.recorded == count } }

        func snapshot() -> ([Double], Int) {
            state.withLock { ($0.late, $0.timedOut) }
        }
    }
}
