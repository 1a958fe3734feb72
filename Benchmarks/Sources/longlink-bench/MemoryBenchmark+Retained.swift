import LongLink
import LongLinkTesting

/// "Nothing retained after completion": what a client keeps of requests that have ended.
///
/// The child process runs rounds of 100,000 requests at once: a third answered, a third timed out,
/// a third cancelled by their callers once written. Two rounds first grow every table, buffer and
/// cache to its peak. The figure is how much the heap in use grew over the next six rounds, per
/// request: a call, reply, timer entry or error kept after its caller has the outcome would add
/// tens of bytes per request. The heap's total moves by tens of kilobytes from one round to the
/// next (buffers at their momentary size), so the bound is a few bytes, not zero. The bare-task
/// control does the same with tasks that only suspend and resume: the runtime's own share.
extension MemoryBenchmark {
    /// Rounds run before the measured ones, and rounds measured.
    static let retainedWarmRounds = 2
    static let retainedRounds = 6

    static func probeRetained(port: Int, count: Int) async throws -> [(String, Double)] {
        await warmRuntime()
        let bench = try await BenchClient.connect(port: port, configure: { $0.deadlineStrategy = BenchProbe.strategy })
        let client = bench.client
        return try await heapGrowth { try await completeRound(client, count: count) }
    }

    /// The control: rounds of `count` tasks that suspend on a continuation and are resumed.
    static func probeRetainedBareTasks(count: Int) async throws -> [(String, Double)] {
        await warmRuntime()
        return try await heapGrowth { await parkAndResume(count) }
    }

    /// Runs `round` for the warming rounds, then for the measured ones; returns how much the heap
    /// in use grew over the measured ones (read once the process has settled).
    private static func heapGrowth(_ round: () async throws -> Void) async throws -> [(String, Double)] {
        for _ in 0..<retainedWarmRounds { try await round() }
        try await Task.sleep(for: .milliseconds(200))
        let heapBefore = ProcessMemory.heapBytesInUse
        for _ in 0..<retainedRounds { try await round() }
        try await Task.sleep(for: .milliseconds(200))
        return [("heap_growth_total", Double(ProcessMemory.heapBytesInUse - heapBefore))]
    }

    /// `count` requests at once, a third each answered, timed out and cancelled; returns once every
    /// caller has its outcome and the client has nothing in flight.
    private static func completeRound(_ client: LongLinkClient, count: Int) async throws {
        let third = count / 3
        let cancelled = Task {
            await withTaskGroup(of: Void.self) { group in
                let options = RequestOptions(timeout: .seconds(600))
                for _ in 0..<third { group.addTask { _ = try? await client.request("never", options: options) } }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            let options = RequestOptions(timeout: .milliseconds(300))
            for _ in 0..<third { group.addTask { _ = try? await client.request("echo", payload: benchPayload) } }
            for _ in 0..<third { group.addTask { _ = try? await client.request("never", options: options) } }
        }
        try await waitUntil("\(third) requests to be cancelled are written") {
            await client.statistics.inFlight >= third
        }
        cancelled.cancel()
        await cancelled.value
        try await waitUntil("nothing in flight") {
            let statistics = await client.statistics
            return statistics.inFlight == 0 && statistics.queued == 0
        }
    }

    /// Polls `condition` every 10 ms for up to two minutes (a probe, not a test: nothing to await).
    private static func waitUntil(_ what: String, _ condition: () async -> Bool) async throws {
        let clock = ContinuousClock()
        let limit = clock.now.advanced(by: .seconds(120))
        while await !condition() {
            guard clock.now < limit else { throw BenchError("timed out waiting for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
