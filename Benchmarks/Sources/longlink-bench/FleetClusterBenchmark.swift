import BenchCLISupport

/// `longlink-bench fleet --cluster`: the fleet on Redis Cluster, with one primary and with three
/// (each primary with one replica, writes `.asynchronous`: what a cluster in production runs),
/// measured side by side in one run, each shape on a cluster of its own (``LocalRedisCluster``).
///
/// In each shape two servers on `ServerStores.redisCluster`: ``principals`` clients logged in on
/// one (each as its own principal, so that the principals spread over the slots) and
/// ``producers`` tasks on the other calling `push(to:)` for the principals in turn.
///
/// - Reliable pushes delivered per second, and requests per second (`echo`, ``inFlightPerClient``
///   in flight on each client, the de-dup window on the cluster).
/// - Redis CPU per push on each primary: its CPU time (`INFO cpu`) over the pushes it stored (its
///   `XADD` calls, `INFO commandstats`); the replicas' CPU per push; Redis CPU per request.
/// - LongLink's CPU per push and per request without the clients' loop: the servers' share.
/// - With three primaries, a failover under load: a primary killed (`SIGKILL`), the time to the
///   first successful produce and request for a principal of its slots, and to its replica's promotion.
enum FleetClusterBenchmark {
    /// The shapes measured: primaries per cluster.
    static let shapes = [1, 3]
    static let principals = 48
    static let producers = 64
    static let inFlightPerClient = 4
    /// Unacknowledged pushes kept per principal: the producers are paused by it, not by Redis.
    static let storeCapacity = 100_000

    /// One shape's measurements in one run.
    struct ShapeRun {
        var pushRate = 0.0
        /// Pushes each primary stored in the window (its `XADD` calls).
        var storedPerPrimary: [Int] = []
        /// Each primary's CPU time over the pushes it stored, µs.
        var primaryCPUPerPush: [Double] = []
        /// The replicas' CPU time over every push stored, µs.
        var replicaCPUPerPush = 0.0
        /// This process's CPU per push delivered without the clients' loop (servers, producers, the
        /// stores' Redis clients), µs.
        var serverCPUPerPush = 0.0
        /// This process's CPU per push delivered, by thread, µs.
        var pushCPUByRole: [ProcessUsage.ThreadRole: Double] = [:]
        /// Pushes stored over produce script calls (group commit per principal), primaries' sum.
        var pushesPerProduceCall = 0.0
        var requestRate = 0.0
        /// The primaries' CPU time over the requests answered, µs.
        var primaryCPUPerRequest = 0.0
        var serverCPUPerRequest = 0.0
        var requestCPUByRole: [ProcessUsage.ThreadRole: Double] = [:]
        var failover: FailoverRun?
    }

    /// Milliseconds from the kill of a primary.
    struct FailoverRun {
        var produce: Double
        var request: Double
        var promotion: Double
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let tools = try RedisTools.find(in: settings.redisDirectory).get()
        var measured: [Int: [ShapeRun]] = [:]
        for run in 1...settings.runs {
            for primaries in shapes {
                benchProgress("fleet --cluster: \(primaries) primaries, run \(run)/\(settings.runs)")
                let cluster = try await LocalRedisCluster.start(tools, primaries: primaries)
                benchProgress(
                    "fleet --cluster: redis-server pids \(cluster.shards.map { "\($0.primary.pid)" }.joined(separator: ", ")) (primaries), "
                        + "\(cluster.shards.map { "\($0.replica.pid)" }.joined(separator: ", ")) (replicas)")
                do {
                    let shape = try await measure(cluster, run: run, settings: settings, failover: primaries == 3)
                    measured[primaries, default: []].append(shape)
                } catch {
                    await cluster.stop()
                    throw error
                }
                await cluster.stop()
            }
        }
        addFigures(one: measured[1] ?? [], three: measured[3] ?? [], into: &report)
    }

    /// Each thread role's CPU per operation, run by run: `server loops 12/13, callers 20/21, …`.
    private static func roles(_ runs: [[ProcessUsage.ThreadRole: Double]]) -> String {
        let names: [(ProcessUsage.ThreadRole, String)] = [
            (.serverLoop, "server loops"), (.clientLoop, "client loop"),
            (.callers, "callers' threads (producers or request callers, consumers)"),
            (.other, "Redis clients' loops and the rest"),
        ]
        return names.map { role, name in
            name + " " + runs.map { BenchReport.number($0[role] ?? 0) }.joined(separator: "/")
        }.joined(separator: ", ")
    }

    private static func addFigures(one: [ShapeRun], three: [ShapeRun], into report: inout BenchReport) {
        let shapeSetup =
            "two servers on ServerStores.redisCluster, \(principals) clients logged in on one as \(principals) principals, "
            + "\(producers) tasks publishing for them in turn on the other; each primary with one replica, .asynchronous"
        report.add(
            BenchFigure(
                key: "fleet.cluster.pushes.one_primary", label: "fleet --cluster: reliable pushes delivered, 1 primary",
                unit: "msg/s", samples: one.map(\.pushRate), note: shapeSetup))
        report.add(
            BenchFigure(
                key: "fleet.cluster.pushes.three_primaries",
                label: "fleet --cluster: reliable pushes delivered, 3 primaries (ratio: to 1 primary)", unit: "msg/s",
                samples: three.map(\.pushRate), baselineSamples: one.map(\.pushRate),
                note: "pushes stored per primary, run by run: "
                    + three.map { run in
                        let total = Double(max(1, run.storedPerPrimary.reduce(0, +)))
                        return run.storedPerPrimary.map { BenchReport.number(100 * Double($0) / total) + "%" }
                            .joined(separator: "/")
                    }.joined(separator: ", ")))
        report.add(
            BenchFigure(
                key: "fleet.cluster.rpc.one_primary", label: "fleet --cluster: rpc echo, de-dup window on 1 primary",
                unit: "req/s", samples: one.map(\.requestRate),
                note: "\(inFlightPerClient) in flight on each of the \(principals) clients"))
        report.add(
            BenchFigure(
                key: "fleet.cluster.rpc.three_primaries",
                label: "fleet --cluster: rpc echo, de-dup window on 3 primaries (ratio: to 1 primary)", unit: "req/s",
                samples: three.map(\.requestRate), baselineSamples: one.map(\.requestRate)))
        report.add(
            BenchFigure(
                key: "fleet.cluster.redis_cpu.push.one_primary",
                label: "fleet --cluster: Redis CPU per push stored, the 1 primary", unit: "µs",
                samples: one.compactMap(\.primaryCPUPerPush.first),
                note: "each primary's INFO cpu delta over its XADD calls (INFO commandstats) in the same window"))
        for index in 0..<3 {
            report.add(
                BenchFigure(
                    key: "fleet.cluster.redis_cpu.push.three_primaries.primary_\(index + 1)",
                    label: "fleet --cluster: Redis CPU per push stored, primary \(index + 1) of 3", unit: "µs",
                    samples: three.compactMap { $0.primaryCPUPerPush.count > index ? $0.primaryCPUPerPush[index] : nil }
                ))
        }
        for (name, runs) in [("one_primary", one), ("three_primaries", three)] {
            let shape = name == "one_primary" ? "1 primary" : "3 primaries"
            report.add(
                BenchFigure(
                    key: "fleet.cluster.replica_cpu.push.\(name)",
                    label: "fleet --cluster: replicas' CPU per push stored, \(shape)", unit: "µs",
                    samples: runs.map(\.replicaCPUPerPush)))
            report.add(
                BenchFigure(
                    key: "fleet.cluster.pushes_per_produce.\(name)",
                    label: "fleet --cluster: pushes per produce script call, \(shape)", unit: "pushes",
                    samples: runs.map(\.pushesPerProduceCall)))
            report.add(
                BenchFigure(
                    key: "fleet.cluster.server_cpu.push.\(name)",
                    label: "fleet --cluster: LongLink CPU per push delivered without the clients' loop, \(shape)",
                    unit: "µs", samples: runs.map(\.serverCPUPerPush),
                    note: (name == "one_primary"
                        ? "this process's CPU (both servers, the producers, the stores' Redis clients, the consumers' counting tasks) minus the clients' event loop; "
                        : "") + "by thread, per run: " + roles(runs.map(\.pushCPUByRole))))
            report.add(
                BenchFigure(
                    key: "fleet.cluster.redis_cpu.request.\(name)",
                    label: "fleet --cluster: Redis CPU per request, primaries' sum, \(shape)", unit: "µs",
                    samples: runs.map(\.primaryCPUPerRequest)))
            report.add(
                BenchFigure(
                    key: "fleet.cluster.server_cpu.request.\(name)",
                    label: "fleet --cluster: LongLink CPU per request without the clients' loop, \(shape)", unit: "µs",
                    samples: runs.map(\.serverCPUPerRequest),
                    note: "by thread, per run: " + roles(runs.map(\.requestCPUByRole))))
        }
        let failovers = three.compactMap(\.failover)
        let failoverNote =
            "a primary of 3 killed (SIGKILL) while \(producers) tasks publish; cluster-node-timeout 2000 ms; attempts paced 5 ms"
        report.add(
            BenchFigure(
                key: "fleet.cluster.failover.produce",
                label: "fleet --cluster: primary killed to first publish stored for a principal of its slots",
                unit: "ms",
                samples: failovers.map(\.produce), note: failoverNote))
        report.add(
            BenchFigure(
                key: "fleet.cluster.failover.request",
                label: "fleet --cluster: primary killed to first request answered for a principal of its slots",
                unit: "ms", samples: failovers.map(\.request)))
        report.add(
            BenchFigure(
                key: "fleet.cluster.failover.promotion",
                label: "fleet --cluster: primary killed to its replica saying role:master", unit: "ms",
                samples: failovers.map(\.promotion)))
        report.notes.append(
            "fleet --cluster: redis-server cluster nodes (--cluster-enabled yes, --save '' --appendonly no) on 127.0.0.1, "
                + "free ports, joined by the benchmark; every node, server and client shares the machine's cores, so "
                + "the 3-primary sum cannot scale here: the per-primary CPU figures are what scales.")
    }
}
