import LongLink
import LongLinkServer

/// `longlink bench pushes`: server pushes consumed through `client.pushes(topic:)`, against the
/// baseline client consuming the same pushes from a blocking socket.
///
/// The producer runs on the server's event loop (a task with the loop as its executor
/// preference), 64 pushes at a time: reliable pushes with `server.push(to:topic:payload:)`, pausing
/// 0.5 ms whenever the principal's store is full (so it is bounded by acknowledgements), and
/// best-effort pushes with `pushBestEffort(to:topic:payload:)`, which the server drops while the
/// connection is not writable. Every measurement has a principal of its own, and a client that logs
/// in as it.
enum PushBenchmark {
    /// Unacknowledged pushes kept per principal: 10x the store's default.
    static let storeCapacity = 100_000
    static let payload: [UInt8] = Array(repeating: 0x5A, count: 32)
    static let topic = "bench"

    private static func produce(
        on server: BenchServer, principal: String, reliable: Bool, until counter: BenchCounter
    ) -> Task<Int, Never> {
        let longLinkServer = server.server
        return Task(executorPreference: server.group.loops[0]) {
            var produced = 0
            while !counter.isStopped {
                var full = false
                for _ in 0..<64 {
                    if reliable {
                        do {
                            try longLinkServer.push(to: principal, topic: topic, payload: payload)
                        } catch {
                            full = true
                            break
                        }
                    } else {
                        longLinkServer.pushBestEffort(to: principal, topic: topic, payload: payload)
                    }
                    produced += 1
                }
                if full {
                    try? await Task.sleep(for: .microseconds(500))
                } else {
                    await Task.yield()
                }
            }
            return produced
        }
    }

    /// Pushes per second received by a LongLinkClient's `pushes(topic:)` consumer.
    static func longLink(server: BenchServer, principal: String, reliable: Bool, settings: BenchSettings) async throws
        -> Double
    {
        let name = Array(principal.utf8)
        return try await withBenchClient(port: server.port) { configuration in
            configuration.login = { session in _ = try await session.request("login", payload: name) }
        } _: { bench in
            let received = BenchCounter()
            let pushes = bench.client.pushes(topic: topic)
            let consumer = Task {
                for await _ in pushes { received.add() }
            }
            let producing = BenchCounter()
            let producer = produce(on: server, principal: principal, reliable: reliable, until: producing)
            let clock = ContinuousClock()
            try await Task.sleep(for: settings.warmUp)
            let (startCount, startTime) = (received.value, clock.now)
            try await Task.sleep(for: settings.duration)
            let (endCount, endTime) = (received.value, clock.now)
            producing.stop()
            _ = await producer.value
            consumer.cancel()
            await consumer.value
            return Double(endCount - startCount) / (endTime - startTime).inSeconds
        }
    }

    /// Pushes per second received by the baseline client.
    static func baseline(server: BenchServer, principal: String, reliable: Bool, settings: BenchSettings) async throws
        -> Double
    {
        let producing = BenchCounter()
        let producer = produce(on: server, principal: principal, reliable: reliable, until: producing)
        do {
            let rate = try await BaselineBenchmark.pushes(port: server.port, principal: principal, settings: settings)
            producing.stop()
            _ = await producer.value
            return rate
        } catch {
            producing.stop()
            _ = await producer.value
            throw error
        }
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let runs = settings.runs
        let store = InMemoryPushStore(capacityPerPrincipal: storeCapacity)
        let figures = try await withBenchServer(pushStore: store) { server in
            var figures: [BenchFigure] = []
            for reliable in [true, false] {
                let kind = reliable ? "reliable" : "best_effort"
                var ours: [Double] = []
                var bare: [Double] = []
                for run in 1...runs {
                    benchProgress("pushes: \(kind), run \(run)/\(runs): baseline")
                    bare.append(
                        try await baseline(
                            server: server, principal: "\(kind)-baseline-\(run)", reliable: reliable, settings: settings))
                    benchProgress("pushes: \(kind), run \(run)/\(runs): LongLink")
                    ours.append(
                        try await longLink(
                            server: server, principal: "\(kind)-longlink-\(run)", reliable: reliable, settings: settings))
                }
                figures.append(
                    BenchFigure(
                        key: "pushes.\(kind).throughput",
                        label: reliable ? "reliable pushes, acked, via pushes(topic:)" : "best-effort pushes via pushes(topic:)",
                        unit: "msg/s", samples: ours, baselineSamples: bare,
                        target: reliable ? .atLeast(1_000_000, ">= 1,000,000 msg/s") : nil,
                        note: reliable
                            ? nil
                            : "received by the consumer; the producer outruns it, the server drops what it cannot write"))
            }
            return figures
        }
        for figure in figures { report.add(figure) }
        report.notes.append(
            "pushes: \(payload.count)-byte payloads on one topic; store capacity \(storeCapacity) unacked per principal; "
                + "client defaults (push buffer 10,000, acks batched by 256 or 5 ms); the baseline acks after every read.")
    }
}
