import LongLink
import LongLinkServer

/// `longlink-bench pushes`: server pushes consumed through `client.pushes(topic:)`, against the
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

    /// Produces until `counter` is stopped, starting 20 ms after `ready` is stopped (set) by the
    /// consumer: once it has logged in and sent `Sync`.
    private static func produce(
        on server: BenchServer, principal: String, reliable: Bool, after ready: BenchCounter,
        until counter: BenchCounter
    ) -> Task<Int, Never> {
        let longLinkServer = server.server
        return Task(executorPreference: server.group.loops[0]) {
            while !ready.isStopped, !counter.isStopped { try? await Task.sleep(for: .milliseconds(1)) }
            try? await Task.sleep(for: .milliseconds(20))
            var produced = 0
            while !counter.isStopped {
                var full = false
                for _ in 0..<64 {
                    if reliable {
                        do {
                            try await longLinkServer.push(to: principal, topic: topic, payload: payload)
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

    struct Measured {
        var rate: Double
        /// Reliable pushes the client refused because its consumer was full (then fetched by `Sync`).
        var deferred = 0
        /// Times the server paused reading the connection.
        var readPauses = 0
        /// Pushes the client read, and best-effort ones a newer push of the same key replaced.
        var received = 0
        var conflated = 0
    }

    /// Pushes per second received by a LongLinkClient's `pushes(topic:)` consumer (with `conflation`
    /// when given, the configured one otherwise).
    static func longLink(
        server: BenchServer, principal: String, reliable: Bool, pushBufferLimit: Int?, settings: BenchSettings,
        tls: TLSConfiguration? = nil, conflation: PushConflation? = nil
    ) async throws -> Measured {
        let name = Array(principal.utf8)
        let pausesBefore = server.server.statistics.readPauses
        return try await withBenchClient(port: server.port) { configuration in
            configuration.tls = tls
            configuration.login = { session in _ = try await session.request("login", payload: name) }
            if let pushBufferLimit { configuration.pushBufferLimit = pushBufferLimit }
        } _: { bench in
            let received = BenchCounter()
            let pushes =
                conflation.map { bench.client.pushes(topic: topic, conflation: $0) }
                ?? bench.client.pushes(topic: topic)
            let consumer = Task {
                for await _ in pushes { received.add() }
            }
            // Connected means logged in with `Sync` sent.
            let ready = BenchCounter()
            ready.stop()
            let producing = BenchCounter()
            let producer = produce(on: server, principal: principal, reliable: reliable, after: ready, until: producing)
            let clock = ContinuousClock()
            try await Task.sleep(for: settings.warmUp)
            let (startCount, startTime) = (received.value, clock.now)
            try await Task.sleep(for: settings.duration)
            let (endCount, endTime) = (received.value, clock.now)
            producing.stop()
            _ = await producer.value
            let statistics = await bench.client.statistics
            consumer.cancel()
            await consumer.value
            return Measured(
                rate: Double(endCount - startCount) / (endTime - startTime).inSeconds,
                deferred: statistics.reliablePushesDeferred,
                readPauses: server.server.statistics.readPauses - pausesBefore, received: statistics.pushesReceived,
                conflated: statistics.bestEffortPushesConflated)
        }
    }

    /// Pushes per second received by the baseline client.
    private static func baseline(server: BenchServer, principal: String, reliable: Bool, settings: BenchSettings)
        async throws -> Double
    {
        let ready = BenchCounter()
        let producing = BenchCounter()
        let producer = produce(on: server, principal: principal, reliable: reliable, after: ready, until: producing)
        do {
            let rate = try await BaselineBenchmark.pushes(port: server.port, principal: principal, settings: settings) {
                ready.stop()
            }
            producing.stop()
            _ = await producer.value
            return rate
        } catch {
            producing.stop()
            _ = await producer.value
            throw error
        }
    }

    private struct Variant {
        var key: String
        var label: String
        var reliable: Bool
        var pushBufferLimit: Int?
        var target: BenchTarget?
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let runs = settings.runs
        let store = InMemoryPushStore(capacityPerPrincipal: storeCapacity)
        let variants = [
            Variant(
                key: "reliable", label: "reliable pushes, acked, via pushes(topic:)", reliable: true,
                target: .atLeast(1_000_000, ">= 1,000,000 msg/s")),
            Variant(
                key: "reliable_large_buffer",
                label: "reliable pushes, pushBufferLimit \(2 * storeCapacity) (no deferral)", reliable: true,
                pushBufferLimit: 2 * storeCapacity, target: .atLeast(1_000_000, ">= 1,000,000 msg/s")),
            Variant(key: "best_effort", label: "best-effort pushes via pushes(topic:)", reliable: false),
        ]
        let (figures, notes) = try await withBenchServer(stores: ServerStores(pushes: store)) { server in
            var figures: [BenchFigure] = []
            var notes: [String] = []
            var baselines: [Bool: [Double]] = [:]
            for variant in variants {
                var ours: [Measured] = []
                for run in 1...runs {
                    if variant.pushBufferLimit == nil {
                        benchProgress("pushes: \(variant.key), run \(run)/\(runs): baseline")
                        baselines[variant.reliable, default: []].append(
                            try await baseline(
                                server: server, principal: "\(variant.key)-baseline-\(run)", reliable: variant.reliable,
                                settings: settings))
                    }
                    benchProgress("pushes: \(variant.key), run \(run)/\(runs): LongLink")
                    ours.append(
                        try await longLink(
                            server: server, principal: "\(variant.key)-longlink-\(run)", reliable: variant.reliable,
                            pushBufferLimit: variant.pushBufferLimit, settings: settings))
                }
                var note: String?
                if variant.reliable {
                    note =
                        "per run: pushes deferred by the client \(ours.map { String($0.deferred) }.joined(separator: "/")), "
                        + "server read pauses \(ours.map { String($0.readPauses) }.joined(separator: "/"))"
                    if ours.contains(where: { $0.rate < 1_000 }) {
                        notes.append(
                            "pushes, \(variant.key): at least one run stalled (under 1,000 msg/s): see RESULTS.md, "
                                + "'server stops reading after a Sync-triggered burst'")
                    }
                } else {
                    note =
                        "received by the consumer; the producer outruns it, the server drops what it cannot write; "
                        + "per run: read by the client \(ours.map { String($0.received) }.joined(separator: "/")), "
                        + "conflated \(ours.map { String($0.conflated) }.joined(separator: "/"))"
                }
                figures.append(
                    BenchFigure(
                        key: "pushes.\(variant.key).throughput", label: variant.label, unit: "msg/s",
                        samples: ours.map(\.rate), baselineSamples: baselines[variant.reliable], target: variant.target,
                        note: note))
            }
            return (figures, notes)
        }
        for figure in figures { report.add(figure) }
        report.notes += notes
        report.notes.append(
            "pushes: \(payload.count)-byte payloads on one topic; store capacity \(storeCapacity) unacked per principal; "
                + "the producer starts 20 ms after the consumer has sent Sync; client defaults (push buffer 10,000, "
                + "acks batched by 256 or 5 ms) unless stated; the baseline acks after every read.")
    }
}
