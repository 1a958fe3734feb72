import Foundation
import LongLinkServer

/// The measurements of `longlink-bench durable`, one run each.
extension DurableBenchmark {
    /// A temporary data directory of the run's own, removed by `body`'s end.
    static func withDirectory<Value>(_ body: (String) async throws -> Value) async throws -> Value {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-bench-durable-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        return try await body(directory.path)
    }

    /// The durable store's configuration for `policy`, with budgets no measurement reaches (the
    /// producers are paused by nothing but the store).
    static func configuration(_ policy: DurableSyncPolicy) -> DurableStoreConfiguration {
        var configuration = DurableStoreConfiguration()
        configuration.sync = policy
        configuration.budgets.pushCapacityPerPrincipal = 100_000_000
        configuration.budgets.pushBytesPerPrincipal = 1 << 40
        // The default budgets (10,000 entries per client over the 120 s window) refuse a client
        // that runs more than 10,000 requests in two minutes: the request rows would measure that.
        configuration.budgets.dedupeCapacity = 100_000_000
        configuration.budgets.dedupeCapacityPerPrincipal = 100_000_000
        configuration.budgets.dedupeCapacityPerClient = 100_000_000
        configuration.budgets.dedupeBytes = 1 << 40
        configuration.budgets.dedupeBytesPerPrincipal = 1 << 40
        configuration.budgets.dedupeBytesPerClient = 1 << 40
        return configuration
    }

    /// Pushes stored per second by `producers` tasks, each pushing to a principal of its own, through
    /// a server's `push(to:)` (`throughServer`) or the store's `append` alone.
    static func pushRate(
        _ store: Store, producers: Int, throughServer: Bool, settings: BenchSettings
    ) async throws -> Double {
        try await withDirectory { directory in
            let pushStore: any PushStore =
                if let policy = store.policy {
                    try DurableStore(directory: directory, configuration: configuration(policy))
                } else {
                    InMemoryPushStore(capacityPerPrincipal: 100_000_000, bytesPerPrincipal: 1 << 40)
                }
            guard throughServer else {
                let rate = try await produce(producers: producers, settings: settings) { principal in
                    _ = try await pushStore.append(PushAppend(principal: principal, topic: topic, payload: payload))
                }
                await (pushStore as? DurableStore)?.close()
                return rate
            }
            // The server owns its store: it closes a durable one when it stops.
            return try await withBenchServer(stores: ServerStores(pushes: pushStore)) { server in
                let longLinkServer = server.server
                return try await produce(producers: producers, settings: settings) { principal in
                    try await longLinkServer.push(to: principal, topic: topic, payload: payload)
                }
            }
        }
    }

    /// `producers` tasks calling `push` in a loop, each with a principal of its own: the calls
    /// returned per second over `--duration`, after the warm-up. A failed call fails the measurement.
    private static func produce(
        producers: Int, settings: BenchSettings, _ push: @escaping @Sendable (String) async throws -> Void
    ) async throws -> Double {
        let stored = BenchTallies(count: producers)
        let producing = BenchCounter()
        let tasks = (0..<producers).map { index in
            Task {
                let principal = "producer-\(index)"
                let tally = stored.tallies[index]
                var count = 0
                while !producing.isStopped {
                    try await push(principal)
                    tally.add()
                    count += 1
                    // The in-memory store answers without suspending: without a yield the producers
                    // would hold every thread of the pool and the measurement's clock would never run.
                    if count % 16 == 0 { await Task.yield() }
                }
            }
        }
        let clock = ContinuousClock()
        try await Task.sleep(for: settings.warmUp)
        let start = (stored.value, clock.now)
        try await Task.sleep(for: settings.duration)
        let end = (stored.value, clock.now)
        producing.stop()
        for task in tasks { try await task.value }
        return Double(end.0 - start.0) / (end.1 - start.1).inSeconds
    }

    /// `redis-benchmark -c clients -P 1 XADD` with `appendfsync mode`: a short trial sizes the
    /// measured run to about `--duration`; the stream is deleted afterwards.
    static func redisXADD(
        _ tools: RedisTools, redis: RedisBenchServer, probe: RedisProbe, mode: String, clients: Int,
        settings: BenchSettings
    ) async throws -> Double {
        let set = try probe.command(["CONFIG", "SET", "appendfsync", mode])
        guard set == .simple("OK") else { throw BenchError("CONFIG SET appendfsync \(mode): \(set)") }
        let command = ["XADD", "bench:durable", "*"] + Array(FleetBenchmark.xaddCommand.dropFirst(3))
        let trial = try await RedisBenchmarkTool.run(
            tools, port: redis.port, clients: clients, pipeline: 1, requests: max(200, 10 * clients), command: command)
        let result = try await RedisBenchmarkTool.run(
            tools, port: redis.port, clients: clients, pipeline: 1,
            requests: max(200, Int(trial.rate * settings.duration.inSeconds)), command: command)
        _ = try probe.command(["DEL", "bench:durable"])
        return result.rate
    }

    /// Requests through a server whose de-dup window is `store`'s (the in-memory window, or a
    /// durable store's with its policy): the p50 at 1 in flight (µs) and the rate at 64.
    static func requests(_ store: Store, settings: BenchSettings) async throws -> (p50: Double, rate: Double) {
        try await withDirectory { directory in
            let stores =
                try store.policy.map {
                    try ServerStores.durable(directory: directory, configuration: configuration($0))
                }
                ?? .inMemory()
            return try await withBenchServer(stores: stores) { server in
                try await withBenchClient(port: server.port) { bench in
                    let p50 = BenchStats.percentile(
                        try await RPCBenchmark.latencies(bench.client, settings: settings), 0.5)
                    let rate = try await RPCBenchmark.throughput(bench.client, inFlight: 64, settings: settings)
                    return (p50, rate)
                }
            }
        }
    }

    /// What the store of ``recoveryPushes`` pushes showed.
    struct Recovery {
        var fillRate: Double
        var bytesPerPush: Double
        var openVerified: [Double] = []
        var openUnverified: [Double] = []
    }

    /// Fills a store with ``recoveryPushes`` pushes (`.never`, a producer per principal), closes it,
    /// weighs its files, then times `runs` opens with their first read, with and without the check.
    static func recovery(runs: Int) async throws -> Recovery {
        try await withDirectory { directory in
            let store = try DurableStore(directory: directory, configuration: configuration(.never))
            let perPrincipal = recoveryPushes / recoveryPrincipals
            let clock = ContinuousClock()
            let start = clock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<recoveryPrincipals {
                    group.addTask {
                        let principal = "recovery-\(index)"
                        for _ in 0..<perPrincipal {
                            _ = try await store.append(PushAppend(principal: principal, topic: topic, payload: payload))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let filled = clock.now - start
            await store.close()
            let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            let bytes = try files.reduce(0) { total, name in
                let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
                return total + ((attributes[.size] as? Int) ?? 0)
            }
            var recovery = Recovery(
                fillRate: Double(recoveryPushes) / filled.inSeconds,
                bytesPerPush: Double(bytes) / Double(recoveryPushes))
            for run in 1...runs {
                for verifies in [true, false] {
                    benchProgress(
                        "durable: open + first read of \(recoveryPushes) pushes (check \(verifies)), run \(run)/\(runs)"
                    )
                    var configuration = DurableStoreConfiguration()
                    configuration.verifiesOnOpen = verifies
                    let opening = clock.now
                    let opened = try DurableStore(directory: directory, configuration: configuration)
                    let first = try await opened.unacknowledged(PushRead(principal: "recovery-0", limit: 100))
                    let elapsed = (clock.now - opening).inSeconds * 1e3
                    await opened.close()
                    guard first.count == 100 else {
                        throw BenchError("the reopened store read \(first.count) pushes, not 100")
                    }
                    if verifies {
                        recovery.openVerified.append(elapsed)
                    } else {
                        recovery.openUnverified.append(elapsed)
                    }
                }
            }
            return recovery
        }
    }
}
