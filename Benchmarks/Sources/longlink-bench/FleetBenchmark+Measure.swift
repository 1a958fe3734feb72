import BenchCLISupport
import LongLink
import LongLinkRedis
import LongLinkServer

/// The measurements of `longlink-bench fleet`, one run each.
extension FleetBenchmark {
    /// What Redis did over a window: calls per command and CPU time, from `INFO` before and after.
    struct RedisWork {
        var calls: [String: Int]
        var cpuSeconds: Double

        /// Snapshots Redis's counters now.
        static func now(_ probe: RedisProbe) throws -> RedisWork {
            RedisWork(calls: try probe.commandCalls(), cpuSeconds: try probe.cpuSeconds())
        }

        /// The work done between `start` and `self`.
        func since(_ start: RedisWork) -> RedisWork {
            RedisWork(
                calls: calls.reduce(into: [:]) { $0[$1.key] = $1.value - (start.calls[$1.key] ?? 0) },
                cpuSeconds: cpuSeconds - start.cpuSeconds)
        }

        func count(_ command: String) -> Int { calls[command] ?? 0 }

        /// Script runs, by SHA-1 or (after NOSCRIPT) by source.
        var scripts: Int { count("evalsha") + count("eval") }

        /// Every command Redis executed, those run inside scripts included, but not the
        /// benchmark's own questions (INFO, CLIENT, CONFIG, SLOWLOG, PING).
        var commands: Int {
            calls.filter { key, _ in !["info", "client", "config", "slowlog", "ping"].contains { key.hasPrefix($0) } }
                .values.reduce(0, +)
        }
    }

    /// One push measurement: pushes delivered to the client per second, and Redis's work per push.
    struct PushRun {
        var rate: Double
        var publishedRate: Double
        var produce: Double
        var read: Double
        var ack: Double
        var deleted: Double
        var commands: Double
        var redisCPUMicroseconds: Double
        /// This process's CPU per push (server, client, producers, Redis clients), and by thread role.
        var processCPUMicroseconds: Double
        var cpuByRole: [ProcessUsage.ThreadRole: Double]
        var connections: Int
        /// The produce script as the store sent it (from run 1 only), for `redis-benchmark`.
        var produceCommand: [String]?
    }

    /// A fleet server on Redis, a client logged in as one principal consuming `pushes(topic:)`
    /// (acks automatic), and ``producers`` tasks calling `push(to:)` for that principal.
    static func pushes(redis: LocalRedisServer, probe: RedisProbe, run: Int, settings: BenchSettings) async throws
        -> PushRun
    {
        let fleet = try ServerStores.redis(
            configuration(redis, prefix: "bench-push-\(run):"), capacityPerPrincipal: storeCapacity,
            bytesPerPrincipal: 1 << 30)
        let principal = "fleet-\(run)"
        return try await withBenchServer(stores: fleet) { server in
            try await withBenchClient(port: server.port) { configuration in
                configuration.login = { session in
                    _ = try await session.request("login", payload: Array(principal.utf8))
                }
            } _: { bench in
                let received = BenchCounter()
                let stream = bench.client.pushes(topic: topic)
                let consumer = Task { for await _ in stream { received.add() } }
                let producing = BenchCounter()
                let published = BenchCounter()
                let longLinkServer = server.server
                let producerTasks = (0..<producers).map { _ in
                    Task {
                        while !producing.isStopped {
                            do {
                                try await longLinkServer.push(to: principal, topic: topic, payload: payload)
                                published.add()
                            } catch {
                                // The principal's bound (the client is behind) or Redis away: wait a little.
                                try? await Task.sleep(for: .milliseconds(1))
                            }
                        }
                    }
                }
                let clock = ContinuousClock()
                try await Task.sleep(for: settings.warmUp)
                let startRoles = ProcessUsage.cpuTimeByRole()
                let startCPU = ProcessUsage.cpuTime()
                let start = (received.value, published.value, clock.now, try RedisWork.now(probe))
                try await Task.sleep(for: settings.duration)
                let end = (received.value, published.value, clock.now, try RedisWork.now(probe))
                let cpu = ProcessUsage.cpuTime() - startCPU
                let roles = ProcessUsage.cpuTimeByRole(since: startRoles)
                producing.stop()
                for task in producerTasks { await task.value }
                let work = end.3.since(start.3)
                let seconds = (end.2 - start.2).inSeconds
                // Producer-side work per push published, consumer-side work per push delivered: in a
                // short window the client can lag the producers.
                let delivered = Double(max(1, end.0 - start.0))
                let stored = Double(max(1, end.1 - start.1))
                // Requests open the de-dup window's connection too, so the count is a serving server's.
                for _ in 0..<10 { _ = try await bench.client.request("echo", payload: benchPayload) }
                let connections = try probe.clientCount() - 1
                let produceCommand = run == 1 ? try await captureProduce(server: longLinkServer, probe: probe) : nil
                consumer.cancel()
                await consumer.value
                // The ack script XRANGEs each seq before it XDELs it; the rest of XRANGE is reads.
                let produce = work.count("xlen")
                return PushRun(
                    rate: Double(end.0 - start.0) / seconds, publishedRate: Double(end.1 - start.1) / seconds,
                    produce: Double(produce) / stored,
                    read: Double(work.count("xrange") - work.count("xdel")) / delivered,
                    ack: Double(work.scripts - produce) / delivered, deleted: Double(work.count("xdel")) / delivered,
                    commands: Double(work.commands) / delivered,
                    redisCPUMicroseconds: work.cpuSeconds * 1e6 / delivered,
                    processCPUMicroseconds: cpu.inMicroseconds / delivered,
                    cpuByRole: roles.mapValues { $0.inMicroseconds / delivered }, connections: connections,
                    produceCommand: produceCommand)
            }
        }
    }

    /// The produce script's `EVALSHA` exactly as the store sends it, read back from Redis's slow log
    /// with every command logged for one `push(to:)`.
    private static func captureProduce(server: LongLinkServer, probe: RedisProbe) async throws -> [String] {
        let threshold = try probe.command(["CONFIG", "GET", "slowlog-log-slower-than"])
        guard case .array(let pair?) = threshold, pair.count == 2, let previous = pair[1].text else {
            throw BenchError("CONFIG GET slowlog-log-slower-than: \(threshold)")
        }
        _ = try probe.command(["CONFIG", "SET", "slowlog-log-slower-than", "0"])
        _ = try probe.command(["SLOWLOG", "RESET"])
        _ = try await server.push(to: "ceiling", topic: topic, payload: payload)
        let log = try probe.command(["SLOWLOG", "GET", "128"])
        _ = try probe.command(["CONFIG", "SET", "slowlog-log-slower-than", previous])
        guard case .array(let entries?) = log else { throw BenchError("SLOWLOG GET: \(log)") }
        for entry in entries {
            guard case .array(let fields?) = entry, fields.count > 3, case .array(let words?) = fields[3] else {
                continue
            }
            let command = words.compactMap(\.text)
            // EVALSHA sha 2 meta stream topic payload size capacity bytes epoch channel publish lineage.
            if command.count == 14, command[0].uppercased() == "EVALSHA", command[4].contains("ceiling") {
                return command
            }
        }
        throw BenchError("the produce script's EVALSHA was not in the slow log")
    }

    /// `redis-benchmark`'s rate for `command` at each of ``redisBenchmarkSetups``, and Redis's CPU
    /// time per command in the first: a short run to size the measured one to about the duration.
    static func redisBenchmark(
        _ tools: RedisTools, redis: LocalRedisServer, probe: RedisProbe, command: [String], settings: BenchSettings
    ) async throws -> (rates: [Double], cpuMicroseconds: Double) {
        var rates: [Double] = []
        var cpu = Double.nan
        for setup in redisBenchmarkSetups {
            let trial = try await RedisBenchmarkTool.run(
                tools, port: redis.port, clients: setup.clients, pipeline: setup.pipeline, requests: 5_000,
                command: command)
            let requests = RedisBenchmarkTool.requests(toLast: settings.duration, at: trial.rate)
            let before = try probe.cpuSeconds()
            let result = try await RedisBenchmarkTool.run(
                tools, port: redis.port, clients: setup.clients, pipeline: setup.pipeline, requests: requests,
                command: command)
            if rates.isEmpty { cpu = (try probe.cpuSeconds() - before) * 1e6 / Double(requests) }
            rates.append(result.rate)
        }
        return (rates, cpu)
    }

    /// One request measurement: echo through a server, plain or of the fleet.
    struct RequestRun {
        var rates: [Int: Double] = [:]
        var p50: Double = .nan
        var scriptCalls = Double.nan
        var commands = Double.nan
        var redisCPUMicroseconds = Double.nan
    }

    static func requests(redis: LocalRedisServer?, probe: RedisProbe, run: Int, settings: BenchSettings) async throws
        -> RequestRun
    {
        let fleet = try redis.map { try ServerStores.redis(configuration($0, prefix: "bench-rpc-\(run):")) }
        return try await withBenchServer(stores: fleet ?? .inMemory()) { server in
            try await withBenchClient(port: server.port) { bench in
                var result = RequestRun()
                for inFlight in inFlightLevels {
                    result.rates[inFlight] = try await RPCBenchmark.throughput(
                        bench.client, inFlight: inFlight, settings: settings)
                }
                result.p50 = BenchStats.percentile(
                    try await RPCBenchmark.latencies(bench.client, settings: settings), 0.5)
                guard fleet != nil else { return result }
                // A fixed number of requests, so that Redis's work divides exactly.
                let count = 6_400
                let start = try RedisWork.now(probe)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<64 {
                        group.addTask {
                            for _ in 0..<(count / 64) {
                                _ = try await bench.client.request("echo", payload: benchPayload)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let work = try RedisWork.now(probe).since(start)
                // Claims and stored replies leave in batches, one script call per batch and kind.
                result.scriptCalls = Double(work.scripts) / Double(count)
                result.commands = Double(work.commands) / Double(count)
                result.redisCPUMicroseconds = work.cpuSeconds * 1e6 / Double(count)
                return result
            }
        }
    }

    /// Milliseconds from aborting the server the client is on (of two, fleet or plain) to the first
    /// successful request on the other.
    static func failover(redis: LocalRedisServer?, run: Int) async throws -> Double {
        let shared = redis.map { configuration($0, prefix: "bench-failover-\(run):") }
        var servers: [BenchServer] = []
        do {
            for index in 0..<2 {
                let fleet = try shared.map { try ServerStores.redis($0) }
                servers.append(try await BenchServer.start(stores: fleet ?? .inMemory()) { $0.serverID = "\(index)" })
            }
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
        let ports = servers.map(\.port)
        let user = Array("failover-\(run)".utf8)
        let bench: BenchClient
        do {
            bench = try await BenchClient.connect(port: ports[0]) { configuration in
                configuration.endpoints = ports.map { .tcp(host: "127.0.0.1", port: $0) }
                configuration.login = { session in _ = try await session.request("login", payload: user) }
            }
        } catch {
            for server in servers { await server.stop() }
            throw error
        }
        return try await RecoveryBenchmark.timeFailover(of: bench, among: servers)
    }

    /// Where the fleet's servers find the benchmark's Redis; `prefix` keeps each measurement's keys apart.
    static func configuration(_ redis: LocalRedisServer, prefix: String) -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: redis.port)
        configuration.keyPrefix = prefix
        return configuration
    }
}
