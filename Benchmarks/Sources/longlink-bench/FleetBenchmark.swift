import BenchCLISupport
import LongLinkRedis
import LongLinkServer

/// `longlink-bench fleet`: servers of a fleet on Redis (`ServerStores.redis`), measured in one run
/// beside Redis's own rate (`redis-benchmark`) and beside the plain in-memory server, on a
/// `redis-server` the scenario starts (free port, temporary directory, no persistence) and stops
/// by its pid.
///
/// - Reliable pushes: one server, one client logged in as one principal consuming and acking,
///   ``producers`` tasks calling `push(to:)` for that principal; the rate is pushes delivered to the
///   client. Beside it `redis-benchmark`'s `XADD` of the same fields, and the produce script itself
///   (its `EVALSHA` read back from Redis's slow log): Redis's ceiling for the store's produce.
/// - Requests: `echo` at 1 and 64 in flight and p50 at 1, fleet server against plain server.
/// - Failover: two servers, the client's one aborted, to the first success on the other.
/// - Redis's work per push and per request from `INFO commandstats` deltas, and connections per
///   server from `CLIENT LIST`.
enum FleetBenchmark {
    static let producers = 64
    /// Unacknowledged pushes kept for the principal: the producers are paused by it, not by Redis.
    static let storeCapacity = 100_000
    static let topic = PushBenchmark.topic
    static let payload = PushBenchmark.payload
    static let inFlightLevels = [1, 64]
    /// `redis-benchmark`'s setups: one connection pipelining 16, and 50 connections without pipelining.
    static let redisBenchmarkSetups = [(clients: 1, pipeline: 16), (clients: 50, pipeline: 1)]
    static let setupNames = ["1 connection, pipeline 16", "50 connections, no pipelining"]

    /// The `XADD` `redis-benchmark` runs: the fields the produce script adds (topic, payload, epoch).
    static var xaddCommand: [String] {
        ["XADD", "bench:xadd", "*", "t", topic, "d", String(decoding: payload, as: UTF8.self), "e", "1"]
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let tools = try RedisTools.find(in: settings.redisDirectory).get()
        try await LocalRedisServer.with(tools) { redis in
            benchProgress("fleet: redis-server pid \(redis.pid) on port \(redis.port)")
            try await measure(tools, redis: redis, settings: settings, into: &report)
        }
    }

    private static func measure(
        _ tools: RedisTools, redis: LocalRedisServer, settings: BenchSettings, into report: inout BenchReport
    ) async throws {
        let probe = try RedisProbe(port: redis.port)
        let version = (try? probe.info("server")["redis_version"]) ?? nil
        var xadd: [[Double]] = [[], []]
        var ceiling: [[Double]] = [[], []]
        var xaddCPU: [Double] = []
        var ceilingCPU: [Double] = []
        var pushes: [PushRun] = []
        var plain: [RequestRun] = []
        var fleet: [RequestRun] = []
        var failovers: (fleet: [Double], plain: [Double]) = ([], [])
        var produceCommand: [String]?
        for run in 1...settings.runs {
            let progress = "run \(run)/\(settings.runs)"
            benchProgress("fleet: redis-benchmark XADD, \(progress)")
            let bare = try await redisBenchmark(
                tools, redis: redis, probe: probe, command: xaddCommand, settings: settings)
            _ = try probe.command(["DEL", "bench:xadd"])
            for index in bare.rates.indices { xadd[index].append(bare.rates[index]) }
            xaddCPU.append(bare.cpuMicroseconds)
            benchProgress("fleet: reliable pushes through Redis, \(progress)")
            let measured = try await self.pushes(redis: redis, probe: probe, run: run, settings: settings)
            pushes.append(measured)
            produceCommand = produceCommand ?? measured.produceCommand.map(unbounded)
            if let produceCommand {
                benchProgress("fleet: redis-benchmark EVALSHA (the produce script), \(progress)")
                let script = try await redisBenchmark(
                    tools, redis: redis, probe: probe, command: produceCommand, settings: settings)
                _ = try probe.command(["DEL", produceCommand[3], produceCommand[4]])
                for index in script.rates.indices { ceiling[index].append(script.rates[index]) }
                ceilingCPU.append(script.cpuMicroseconds)
            }
            benchProgress("fleet: requests, plain server, \(progress)")
            plain.append(try await requests(redis: nil, probe: probe, run: run, settings: settings))
            benchProgress("fleet: requests, fleet server, \(progress)")
            fleet.append(try await requests(redis: redis, probe: probe, run: run, settings: settings))
            benchProgress("fleet: failover, \(progress)")
            failovers.fleet.append(try await failover(redis: redis, run: run))
            failovers.plain.append(try await failover(redis: nil, run: run))
        }
        for (index, setup) in setupNames.enumerated() {
            report.add(
                BenchFigure(
                    key: "fleet.redis_benchmark.xadd.\(index == 0 ? "pipelined" : "connections_50")",
                    label: "fleet: redis-benchmark XADD, \(setup)", unit: "ops/s", samples: xadd[index]))
        }
        for (index, setup) in setupNames.enumerated() {
            report.add(
                BenchFigure(
                    key: "fleet.redis_benchmark.produce_script.\(index == 0 ? "pipelined" : "connections_50")",
                    label: "fleet: redis-benchmark EVALSHA produce script, \(setup)", unit: "ops/s",
                    samples: ceiling[index], baselineSamples: xadd[index],
                    note: index == 0
                        ? "Redis's ceiling for the store's produce (HGET, XLEN, HGET, HINCRBY, XADD, HINCRBY, PUBLISH in one script), the command captured from a real publish; baseline: XADD, same setup"
                        : nil))
        }
        let target = BenchTarget.ratioAtLeast(0.5, ">= 0.5x XADD")
        for (index, setup) in setupNames.enumerated() {
            report.add(
                BenchFigure(
                    key: "fleet.pushes.throughput.vs_\(index == 0 ? "pipelined" : "connections_50")",
                    label: "fleet: reliable pushes delivered, one server, vs XADD \(setup)", unit: "msg/s",
                    samples: pushes.map(\.rate), baselineSamples: xadd[index], target: target,
                    note: index == 0
                        ? "one LongLinkServer (ServerStores.redis), one client logged in as one principal, acks automatic; \(producers) tasks calling publish for that principal; store bound \(storeCapacity)"
                        : nil))
        }
        report.add(
            BenchFigure(
                key: "fleet.pushes.throughput.vs_produce_script",
                label: "fleet: reliable pushes vs the produce script alone (pipelined)",
                unit: "msg/s", samples: pushes.map(\.rate), baselineSamples: ceiling[0]))
        report.add(
            BenchFigure(
                key: "fleet.pushes.published", label: "fleet: publish calls completed", unit: "msg/s",
                samples: pushes.map(\.publishedRate)))
        addRequestFigures(plain: plain, fleet: fleet, into: &report)
        report.add(
            BenchFigure(
                key: "fleet.failover.first_success",
                label: "fleet: client's server aborted to first success on the other",
                unit: "ms", samples: failovers.fleet, baselineSamples: failovers.plain,
                note: "two servers sharing one Redis, client logged in; baseline: two plain servers"))
        addOperationFigures(pushes: pushes, fleet: fleet, into: &report)
        report.add(
            BenchFigure(
                key: "fleet.redis_cpu.xadd", label: "fleet: Redis CPU per XADD (redis-benchmark, pipelined)",
                unit: "µs",
                samples: xaddCPU))
        report.add(
            BenchFigure(
                key: "fleet.redis_cpu.produce_script",
                label: "fleet: Redis CPU per produce script (redis-benchmark, pipelined)",
                unit: "µs", samples: ceilingCPU))
        report.notes.append(
            "fleet: redis-server \(version ?? "?") started with --save '' --appendonly no on 127.0.0.1, a free port; "
                + "redis-benchmark on the same Redis in the same run; XADD adds the fields the produce script adds "
                + "(t, d: \(payload.count) bytes, e). Everything shares the machine's cores.")
    }

    private static func addRequestFigures(plain: [RequestRun], fleet: [RequestRun], into report: inout BenchReport) {
        for inFlight in inFlightLevels {
            report.add(
                BenchFigure(
                    key: "fleet.rpc.in_flight_\(inFlight).throughput",
                    label: "fleet: rpc echo, \(inFlight) in flight, Redis de-dup window", unit: "req/s",
                    samples: fleet.compactMap { $0.rates[inFlight] },
                    baselineSamples: plain.compactMap { $0.rates[inFlight] },
                    note: inFlight == 1 ? "baseline: the same server and client with the in-memory window" : nil))
        }
        report.add(
            BenchFigure(
                key: "fleet.rpc.latency.p50", label: "fleet: rpc p50, 1 in flight, Redis de-dup window", unit: "µs",
                samples: fleet.map(\.p50), baselineSamples: plain.map(\.p50)))
    }

    private static func addOperationFigures(pushes: [PushRun], fleet: [RequestRun], into report: inout BenchReport) {
        let perPush: [(String, String, (PushRun) -> Double)] = [
            ("produce", "produce (EVALSHA script)", \.produce), ("read", "read (XRANGE)", \.read),
            ("ack", "ack (EVALSHA script)", \.ack),
            (
                "round_trips", "round trips (produce + read + ack)",
                {
                    $0.produce + $0.read + $0.ack
                }
            ),
            ("xdel", "XDEL (inside the ack script)", \.deleted),
            ("commands", "commands executed (scripts and their calls)", \.commands),
        ]
        for (key, label, value) in perPush {
            report.add(
                BenchFigure(
                    key: "fleet.ops_per_push.\(key)", label: "fleet: Redis ops per push, \(label)", unit: "ops",
                    samples: pushes.map(value),
                    note: key == "commands"
                        ? "INFO commandstats deltas over the measured window / pushes delivered; commands run by a script count as well as the script"
                        : nil))
        }
        report.add(
            BenchFigure(
                key: "fleet.redis_cpu.push", label: "fleet: Redis CPU per reliable push", unit: "µs",
                samples: pushes.map(\.redisCPUMicroseconds)))
        let roles: [(ProcessUsage.ThreadRole, String)] = [
            (.serverLoop, "server loop"), (.clientLoop, "client loop"), (.callers, "producers"),
            (.other, "Redis clients' loops and the rest"),
        ]
        report.add(
            BenchFigure(
                key: "fleet.process_cpu.push", label: "fleet: LongLink process CPU per reliable push", unit: "µs",
                samples: pushes.map(\.processCPUMicroseconds),
                note: "server, client, producers and the Redis clients in this process; by thread, per run: "
                    + roles.map { role, name in
                        name + " " + pushes.map { BenchReport.number($0.cpuByRole[role] ?? 0) }.joined(separator: "/")
                    }.joined(separator: ", ")))
        let perRequest: [(String, String, (RequestRun) -> Double)] = [
            ("script_calls", "script calls (claims and stored replies, batched per turn)", \.scriptCalls),
            ("commands", "commands executed (scripts and their calls)", \.commands),
        ]
        for (key, label, value) in perRequest {
            report.add(
                BenchFigure(
                    key: "fleet.ops_per_request.\(key)", label: "fleet: Redis ops per request, \(label)", unit: "ops",
                    samples: fleet.map(value)))
        }
        report.add(
            BenchFigure(
                key: "fleet.redis_cpu.request", label: "fleet: Redis CPU per request", unit: "µs",
                samples: fleet.map(\.redisCPUMicroseconds), note: "6,400 echo calls, 64 in flight"))
        report.add(
            BenchFigure(
                key: "fleet.connections_per_server", label: "fleet: Redis connections per server", unit: "connections",
                samples: pushes.map { Double($0.connections) },
                note: "CLIENT LIST minus the benchmark's own, one server that has served pushes and requests"))
    }

    /// The captured produce command with the principal's bounds lifted, so that every run of it in
    /// `redis-benchmark` stores a push instead of stopping at the bound.
    static func unbounded(_ command: [String]) -> [String] {
        var command = command
        command[8] = "1000000000"
        command[9] = "1000000000000"
        return command
    }
}
