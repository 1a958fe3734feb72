import LongLink
import Synchronization

/// `longlink-bench memory`: what a pending request and an idle client cost in resident memory.
///
/// Each figure comes from a fresh child process (see ``BenchProbe``) that talks to the server in
/// this process: the child reads its resident set size (/proc/self/statm) before and after
/// creating 100,000 things, and the figure is the difference divided by the count.
/// - pending request: a child task of a task group calling `client.request("never")` (a handler
///   that never answers; 600 s timeout), measured once all are written on the link;
/// - bare suspended task: a child task of a task group suspended on a continuation, nothing else;
/// - beyond the caller's task: the first minus the second (the target counts this);
/// - idle client: a connected client with the default configuration (shared event loops) and
///   nothing to do;
/// - retained after completion: the heap that requests keep once they have ended (see
///   `MemoryBenchmark+Retained.swift`).
enum MemoryBenchmark {
    static let count = 100_000
    /// "Nothing retained", above the heap's own noise (its in-use total moves by tens to hundreds of
    /// kilobytes between rounds of 100,000: buffers at their momentary size): an object kept per
    /// request would add at least 32 bytes each (the smallest heap chunk), an array slot kept per
    /// request 8.
    static let retainedLimit: Double = 4
    /// For the retained-memory probes: glibc's per-thread caches of freed chunks count as heap in
    /// use, and they fill slowly over tens of rounds (hundreds of kilobytes per thread at most),
    /// which read as growth; without them the figure is what the program holds.
    static let withoutThreadCaches = ["GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"]

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let runs = settings.runs
        var pending: [Double] = []
        var tasks: [Double] = []
        var beyond: [Double] = []
        var idleDelta: [Double] = []
        var idleTotal: [Double] = []
        var retainedHeap: [Double] = []
        var retainedBare: [Double] = []
        try await withBenchServer { configuration in
            configuration.maxInFlightPerConnection = 1_000_000
            configuration.dedupeWindow = .zero
        } _: { server in
            for run in 1...runs {
                benchProgress("memory: idle client, run \(run)/\(runs)")
                let idle = try await BenchProbe.spawn("idle", port: server.port)
                idleDelta.append(((idle["rss_after"] ?? 0) - (idle["rss_before"] ?? 0)) / 1024)
                idleTotal.append((idle["rss_after"] ?? 0) / 1024)
                benchProgress("memory: \(count) bare suspended tasks, run \(run)/\(runs)")
                let bare = try await BenchProbe.spawn("tasks", port: server.port, count: count)
                let perTask = ((bare["rss_after"] ?? 0) - (bare["rss_before"] ?? 0)) / Double(count)
                benchProgress("memory: \(count) pending requests, run \(run)/\(runs)")
                let requests = try await BenchProbe.spawn("pending", port: server.port, count: count)
                let perRequest = ((requests["rss_after"] ?? 0) - (requests["rss_before"] ?? 0)) / Double(count)
                tasks.append(perTask)
                pending.append(perRequest)
                beyond.append(perRequest - perTask)
                benchProgress("memory: rounds of \(count) requests that end, run \(run)/\(runs)")
                let retained = try await BenchProbe.spawn(
                    "retained", port: server.port, count: count, extra: withoutThreadCaches)
                retainedHeap.append((retained["heap_growth_total"] ?? .nan) / Double(count * retainedRounds))
                benchProgress("memory: rounds of \(count) bare tasks, run \(run)/\(runs)")
                let control = try await BenchProbe.spawn(
                    "retained-tasks", port: server.port, count: count, extra: withoutThreadCaches)
                retainedBare.append((control["heap_growth_total"] ?? .nan) / Double(count * retainedRounds))
            }
        }
        report.add(
            BenchFigure(
                key: "memory.pending_request.bytes", label: "memory per pending request (with its caller's task)",
                unit: "B", samples: pending, note: "\(count) pending on one connection, RSS delta / count"))
        report.add(
            BenchFigure(
                key: "memory.suspended_task.bytes", label: "memory per bare suspended task", unit: "B", samples: tasks))
        report.add(
            BenchFigure(
                key: "memory.pending_request_beyond_task.bytes",
                label: "memory per pending request beyond the caller's task",
                unit: "B", samples: beyond, target: .atMost(1_536, "<= 1.5 KiB")))
        report.add(
            BenchFigure(
                key: "memory.retained_after_completion.bytes",
                label: "heap kept per ended request (answered, timed out, cancelled)",
                unit: "B", samples: retainedHeap, target: .atMost(retainedLimit, "nothing retained (<= 4 B)"),
                note:
                    "rounds of \(count) requests at once, a third each answered, timed out and cancelled: growth of "
                    + "the heap in use (mallinfo2, glibc's thread caches off) over \(retainedRounds) rounds after "
                    + "\(retainedWarmRounds), per request"))
        report.add(
            BenchFigure(
                key: "memory.retained_after_completion.bare_tasks", label: "heap kept per bare task that ended",
                unit: "B", samples: retainedBare, note: "the control: tasks that only suspend and resume, same rounds"))
        report.add(
            BenchFigure(
                key: "memory.idle_client.rss_delta", label: "idle client, resident memory added", unit: "KiB",
                samples: idleDelta, note: "default configuration: includes the shared event loops it starts"))
        report.add(
            BenchFigure(
                key: "memory.idle_client.rss", label: "idle client process, resident memory", unit: "KiB",
                samples: idleTotal))
    }

    // MARK: Probes (in the child process)

    /// Touches the runtime's lazily created parts (task allocator, timers, the cooperative pool)
    /// before the first reading.
    static func warmRuntime() async {
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { await Task.yield() } }
        }
        try? await Task.sleep(for: .milliseconds(50))
    }

    static func probeIdleClient(port: Int) async throws -> [(String, Double)] {
        await warmRuntime()
        let before = ProcessUsage.residentBytes()
        let bench = try await BenchClient.connect(
            port: port, group: .shared, configure: { $0.deadlineStrategy = BenchProbe.strategy })
        try await Task.sleep(for: .milliseconds(300))
        let after = ProcessUsage.residentBytes()
        _ = bench
        return [("rss_before", Double(before)), ("rss_after", Double(after))]
    }

    /// Continuations of parked tasks.
    private final class Parking: Sendable {
        private let parked: Mutex<[UnsafeContinuation<Void, Never>]>

        init(capacity: Int) {
            var array: [UnsafeContinuation<Void, Never>] = []
            array.reserveCapacity(capacity)
            parked = Mutex(array)
        }

        func park(_ continuation: UnsafeContinuation<Void, Never>) {
            parked.withLock { $0.append(continuation) }
        }

        var count: Int { parked.withLock { $0.count } }

        func resumeAll() {
            let all = parked.withLock { parked in
                defer { parked.removeAll(keepingCapacity: true) }
                return parked
            }
            for continuation in all { continuation.resume() }
        }
    }

    /// Suspends `count` child tasks on continuations until all are parked, then resumes them all.
    static func parkAndResume(_ count: Int) async {
        let parking = Parking(capacity: count)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { await withUnsafeContinuation { parking.park($0) } } }
            while parking.count < count { try? await Task.sleep(for: .milliseconds(5)) }
            parking.resumeAll()
        }
    }

    static func probeSuspendedTasks(count: Int) async throws -> [(String, Double)] {
        await warmRuntime()
        await parkAndResume(1_000)
        let parking = Parking(capacity: count)
        let before = ProcessUsage.residentBytes()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count { group.addTask { await withUnsafeContinuation { parking.park($0) } } }
            while parking.count < count { try? await Task.sleep(for: .milliseconds(5)) }
            try? await Task.sleep(for: .milliseconds(200))
            let after = ProcessUsage.residentBytes()
            BenchProbe.report([("rss_before", Double(before)), ("rss_after", Double(after)), ("count", Double(count))])
        }
        return []
    }

    static func probePendingRequests(port: Int, count: Int) async throws -> [(String, Double)] {
        await warmRuntime()
        let bench = try await BenchClient.connect(port: port, configure: { $0.deadlineStrategy = BenchProbe.strategy })
        let client = bench.client
        // The same paths once, small: replies, and requests that time out.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<1_000 { group.addTask { _ = try await client.request("echo", payload: benchPayload) } }
            for _ in 0..<1_000 {
                group.addTask {
                    _ = try? await client.request("never", options: RequestOptions(timeout: .milliseconds(50)))
                }
            }
            try await group.waitForAll()
        }
        try await Task.sleep(for: .milliseconds(200))
        let before = ProcessUsage.residentBytes()
        let options = RequestOptions(timeout: .seconds(600))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask { _ = try? await client.request("never", options: options) }
            }
            let clock = ContinuousClock()
            let limit = clock.now.advanced(by: .seconds(120))
            var written = 0
            while clock.now < limit {
                written = await client.statistics.inFlight
                if written >= count { break }
                try? await Task.sleep(for: .milliseconds(20))
            }
            // Let the write buffer drain into the server.
            try? await Task.sleep(for: .milliseconds(500))
            let after = ProcessUsage.residentBytes()
            BenchProbe.report([
                ("rss_before", Double(before)), ("rss_after", Double(after)), ("in_flight", Double(written)),
            ])
        }
        return []
    }
}
