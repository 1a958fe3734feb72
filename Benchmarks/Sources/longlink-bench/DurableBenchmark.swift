import BenchCLISupport
import Foundation
import LongLinkServer

/// `longlink-bench durable`: the durable store (``DurableStore``) with each sync policy beside the
/// in-memory store and beside Redis 7's `XADD` with `appendfsync always` and `everysec`, in one run,
/// on the same disk (the temporary directory) and at the same producer concurrencies.
///
/// - Reliable pushes stored per second through the producer's call, `LongLinkServer.push(to:)`:
///   one server, no client (each push is stored and waits there), ``concurrencies`` tasks each
///   pushing to a principal of its own, unbounded budgets. Beside it the store alone
///   (`PushStore.append`), without the server.
/// - Redis: a `redis-server` of the run's own started with `--appendonly yes` (its `appendfsync`
///   switched between measurements), `redis-benchmark -c N -P 1` running `XADD` of the same fields.
/// - Disk bytes per stored push and recovery: a store filled with ``recoveryPushes`` pushes
///   (`.never`, many producers), closed (which checkpoints), its files' size over the count; then
///   opened again and read (one principal's first page), timed, with and without the open's check.
/// - Requests: `echo` p50 at 1 in flight and the rate at 64, on a server whose de-dup window is in a
///   durable store (`.everyCommit`: each request's claim and reply are committed) beside the
///   in-memory window.
enum DurableBenchmark {
    static let concurrencies = [1, 64]
    static let topic = PushBenchmark.topic
    static let payload = PushBenchmark.payload
    /// The pushes the recovery store holds.
    static let recoveryPushes = 1_000_000
    /// Principals the recovery store's pushes are spread over (a thousand users' backlogs).
    static let recoveryPrincipals = 1_000

    /// The stores measured, in the order of each run.
    enum Store: CaseIterable {
        case everyCommit
        case interval
        case never
        case inMemory

        var key: String {
            switch self {
            case .everyCommit: "every_commit"
            case .interval: "interval_1s"
            case .never: "never"
            case .inMemory: "in_memory"
            }
        }

        var name: String {
            switch self {
            case .everyCommit: "durable .everyCommit"
            case .interval: "durable .interval(1 s)"
            case .never: "durable .never"
            case .inMemory: "in-memory store"
            }
        }

        var policy: DurableSyncPolicy? {
            switch self {
            case .everyCommit: .everyCommit
            case .interval: .interval(.seconds(1))
            case .never: .never
            case .inMemory: nil
            }
        }
    }

    /// Redis's AOF settings measured.
    static let redisModes = ["always", "everysec"]

    /// The samples of every run, by figure key.
    struct Samples {
        var values: [String: [Double]] = [:]

        mutating func add(_ key: String, _ value: Double) {
            values[key, default: []].append(value)
        }

        subscript(key: String) -> [Double] { values[key] ?? [] }
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let tools = try RedisTools.find(in: settings.redisDirectory, neededBy: "the durable scenario").get()
        // Appends everything: no rewrite during the run (its fork would land in one measurement).
        try await LocalRedisServer.with(
            tools,
            extraArguments: ["--appendonly", "yes", "--appendfsync", "always", "--auto-aof-rewrite-percentage", "0"]
        ) { redis in
            benchProgress(
                "durable: redis-server pid \(redis.pid) on port \(redis.port), AOF in \(redis.directory.path)")
            try await measure(tools, redis: redis, settings: settings, into: &report)
        }
    }

    private static func measure(
        _ tools: RedisTools, redis: LocalRedisServer, settings: BenchSettings, into report: inout BenchReport
    ) async throws {
        let probe = try RedisProbe(port: redis.port)
        let version = (try? probe.info("server")["redis_version"]) ?? nil
        var samples = Samples()
        for run in 1...settings.runs {
            let progress = "run \(run)/\(settings.runs)"
            for producers in concurrencies {
                for mode in redisModes {
                    benchProgress("durable: redis-benchmark -c \(producers) XADD, appendfsync \(mode), \(progress)")
                    samples.add(
                        "redis.\(mode).\(producers)",
                        try await redisXADD(
                            tools, redis: redis, probe: probe, mode: mode, clients: producers,
                            settings: settings))
                }
                for store in Store.allCases {
                    benchProgress("durable: push(to:), \(store.name), \(producers) producers, \(progress)")
                    samples.add(
                        "push.\(store.key).\(producers)",
                        try await pushRate(store, producers: producers, throughServer: true, settings: settings))
                    benchProgress("durable: the store alone, \(store.name), \(producers) producers, \(progress)")
                    samples.add(
                        "append.\(store.key).\(producers)",
                        try await pushRate(store, producers: producers, throughServer: false, settings: settings))
                }
            }
            for store in [Store.inMemory, .everyCommit] {
                benchProgress("durable: requests, \(store.name) de-dup window, \(progress)")
                let measured = try await requests(store, settings: settings)
                samples.add("rpc.p50.\(store.key)", measured.p50)
                samples.add("rpc.64.\(store.key)", measured.rate)
            }
        }
        benchProgress("durable: filling a store with \(recoveryPushes) pushes (.never)")
        let recovery = try await recovery(runs: settings.runs)
        addFigures(samples, recovery: recovery, into: &report)
        report.notes.append(
            "durable: every store and redis-server \(version ?? "?") (--appendonly yes, appendfsync switched by CONFIG SET, "
                + "no AOF rewrite) in \(FileManager.default.temporaryDirectory.path) (\(fileSystem())), the same disk; "
                + "XADD adds the fields a push holds (t, d: \(payload.count) bytes, e), redis-benchmark -c N -P 1, "
                + "as many connections as producers. Every figure's ratio compares medians measured in this run.")
    }

    private static func addFigures(_ samples: Samples, recovery: Recovery, into report: inout BenchReport) {
        for producers in concurrencies {
            for mode in redisModes {
                report.add(
                    BenchFigure(
                        key: "durable.redis_xadd.\(mode).producers_\(producers)",
                        label: "durable: Redis XADD, appendfsync \(mode), \(producers) connections", unit: "ops/s",
                        samples: samples["redis.\(mode).\(producers)"]))
            }
            for store in Store.allCases {
                let (baseline, target): (String?, BenchTarget?) =
                    switch store {
                    case .everyCommit:
                        ("redis.always.\(producers)", .ratioAtLeast(1, ">= 1x Redis appendfsync always"))
                    case .interval: ("push.in_memory.\(producers)", .ratioAtLeast(0.5, ">= 0.5x the in-memory store"))
                    case .never: ("push.in_memory.\(producers)", nil)
                    case .inMemory: ("redis.everysec.\(producers)", nil)
                    }
                report.add(
                    BenchFigure(
                        key: "durable.push.\(store.key).producers_\(producers)",
                        label: "durable: push(to:) stored, \(store.name), \(producers) producers", unit: "msg/s",
                        samples: samples["push.\(store.key).\(producers)"],
                        baselineSamples: baseline.map { samples[$0] },
                        target: target,
                        note: store == .everyCommit && producers == 1
                            ? "LongLinkServer.push(to:) returned (stored, no client connected), each producer a principal "
                                + "of its own; baseline: .everyCommit against XADD appendfsync always, .interval and .never "
                                + "against the in-memory store, the in-memory store against XADD everysec"
                            : nil))
            }
            for store in Store.allCases {
                report.add(
                    BenchFigure(
                        key: "durable.store_append.\(store.key).producers_\(producers)",
                        label: "durable: the store's append alone, \(store.name), \(producers) producers",
                        unit: "msg/s",
                        samples: samples["append.\(store.key).\(producers)"],
                        baselineSamples: store == .inMemory ? nil : samples["append.in_memory.\(producers)"],
                        note: store == .everyCommit && producers == 1
                            ? "PushStore.append on the store, no server; baseline: InMemoryPushStore's append" : nil))
            }
        }
        report.add(
            BenchFigure(
                key: "durable.disk_bytes_per_push", label: "durable: disk bytes per stored push", unit: "B",
                samples: [recovery.bytesPerPush],
                note: "the files of a store holding \(recoveryPushes) pushes (\(topic.utf8.count) B topic, "
                    + "\(payload.count) B payload, \(recoveryPrincipals) principals) after its close's checkpoint, / the count"
            ))
        report.add(
            BenchFigure(
                key: "durable.recovery.open_and_first_read",
                label: "durable: open + first read, 1,000,000 pushes stored",
                unit: "ms", samples: recovery.openVerified,
                note: "DurableStore(directory:) with the default configuration (PRAGMA quick_check on open) and one "
                    + "principal's first 100 pushes; filled at \(BenchReport.number(recovery.fillRate)) pushes/s (.never)"
            ))
        report.add(
            BenchFigure(
                key: "durable.recovery.open_and_first_read_unverified",
                label: "durable: open + first read, 1,000,000 pushes, verifiesOnOpen false", unit: "ms",
                samples: recovery.openUnverified))
        report.add(
            BenchFigure(
                key: "durable.rpc.latency.p50", label: "durable: rpc p50, 1 in flight, durable de-dup window",
                unit: "µs",
                samples: samples["rpc.p50.every_commit"], baselineSamples: samples["rpc.p50.in_memory"],
                note: "a logged-in client's echo; the window in a DurableStore (.everyCommit): the claim and the reply "
                    + "are committed; baseline: the in-memory window"))
        report.add(
            BenchFigure(
                key: "durable.rpc.in_flight_64.throughput",
                label: "durable: rpc echo, 64 in flight, durable de-dup window", unit: "req/s",
                samples: samples["rpc.64.every_commit"], baselineSamples: samples["rpc.64.in_memory"]))
    }

    /// The file system of the temporary directory (`ext4`, `tmpfs`), from /proc/mounts: the longest
    /// mount point that holds it.
    static func fileSystem() -> String {
        let path = FileManager.default.temporaryDirectory.resolvingSymlinksInPath().path
        let mounts = (try? String(contentsOfFile: "/proc/mounts", encoding: .utf8)) ?? ""
        var best: (point: String, type: String)?
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let point = String(fields[1])
            guard path == point || path.hasPrefix(point == "/" ? "/" : point + "/") else { continue }
            if point.count > (best?.point.count ?? -1) { best = (point, String(fields[2])) }
        }
        return best.map { "\($0.type) on \($0.point)" } ?? "file system unknown"
    }
}
