import BenchCLISupport
import LongLink
import LongLinkRedis
import LongLinkServer
import LongLinkTransport

/// The measurements of `longlink-bench fleet --cluster` on one cluster.
extension FleetClusterBenchmark {
    /// The servers and clients of one shape: a producing server, a serving one with a client per principal.
    struct Fleet {
        var producer: BenchServer
        var consumer: BenchServer
        var clients: [BenchClient]
        var names: [String]
        /// The index of the primary serving each principal, as the cluster was started.
        var shardOf: [Int]
    }

    /// Starts the two servers and the clients on `cluster`, measures and stops them.
    static func measure(_ cluster: LocalRedisCluster, run: Int, settings: BenchSettings, failover: Bool)
        async throws -> ShapeRun
    {
        let seeds = cluster.seeds(keyPrefix: "bench-cluster-\(run):")
        let names = (0..<principals).map { "c-\($0)" }
        let shardOf = try names.map { try cluster.shardIndex(ofPrincipal: $0) }
        var servers: [BenchServer] = []
        var clients: [BenchClient] = []
        let clientGroup = EventLoopGroup(loopCount: 1, name: "bench-client")
        func stopAll() async {
            for client in clients { await client.stop() }
            for server in servers { await server.stop() }
            await clientGroup.shutdownAndWait()
        }
        do {
            for role in ["producer", "consumer"] {
                let stores = try ServerStores.redisCluster(
                    seeds, capacityPerPrincipal: storeCapacity, bytesPerPrincipal: 1 << 30)
                servers.append(try await BenchServer.start(stores: stores) { $0.serverID = role })
            }
            for name in names {
                clients.append(
                    try await BenchClient.connect(port: servers[1].port, group: clientGroup) { configuration in
                        configuration.login = { session in
                            _ = try await session.request("login", payload: Array(name.utf8))
                        }
                    })
            }
            let fleet = Fleet(
                producer: servers[0], consumer: servers[1], clients: clients, names: names, shardOf: shardOf)
            var shape = try await pushes(fleet, cluster: cluster, settings: settings)
            try await requests(fleet, cluster: cluster, settings: settings, into: &shape)
            if failover { shape.failover = try await self.failover(fleet, cluster: cluster, settings: settings) }
            await stopAll()
            return shape
        } catch {
            await stopAll()
            throw error
        }
    }

    /// Redis's counters on every node, primaries first.
    private static func snapshot(_ probes: [RedisProbe]) throws -> [FleetBenchmark.RedisWork] {
        try probes.map { try FleetBenchmark.RedisWork.now($0) }
    }

    /// What one measured window saw.
    private struct Window {
        /// How much the counter grew, and in how many seconds.
        let count: Int
        let seconds: Double
        /// Each probed node's Redis work, in the probes' order.
        let work: [FleetBenchmark.RedisWork]
        /// This process's CPU without the clients' event loop, and all of it by thread.
        let serverCPU: Duration
        let roles: [ProcessUsage.ThreadRole: Duration]

        var rate: Double { Double(count) / seconds }
        /// `count`, never 0: a per-operation figure of an empty window is its cost over one.
        var divisor: Double { Double(max(1, count)) }
    }

    /// After the warm-up, `counter`'s growth, the probed nodes' work and this process's CPU over
    /// one `settings.duration`.
    private static func measureWindow(
        of counter: BenchCounter, probes: [RedisProbe], settings: BenchSettings
    ) async throws -> Window {
        let clock = ContinuousClock()
        try await Task.sleep(for: settings.warmUp)
        let startRoles = ProcessUsage.cpuTimeByRole()
        let startCPU = ProcessUsage.cpuTime()
        let start = (counter.value, clock.now, try snapshot(probes))
        try await Task.sleep(for: settings.duration)
        let end = (counter.value, clock.now, try snapshot(probes))
        let cpu = ProcessUsage.cpuTime() - startCPU
        let roles = ProcessUsage.cpuTimeByRole(since: startRoles)
        return Window(
            count: end.0 - start.0, seconds: (end.1 - start.1).inSeconds,
            work: zip(end.2, start.2).map { $0.since($1) },
            serverCPU: cpu - (roles[.clientLoop] ?? .zero), roles: roles)
    }

    /// ``producers`` tasks publishing on the producing server for the principals in turn until
    /// `producing` stops; `published` counts the pushes stored.
    private static func startProducers(_ fleet: Fleet, producing: BenchCounter, published: BenchCounter) -> [Task<
        Void, Never
    >] {
        let server = fleet.producer.server
        let names = fleet.names
        return (0..<producers).map { index in
            Task {
                var next = index
                while !producing.isStopped {
                    do {
                        _ = try await server.push(
                            to: names[next % names.count], topic: FleetBenchmark.topic, payload: FleetBenchmark.payload)
                        published.add()
                    } catch {
                        // The principal's bound (its client is behind) or its primary away: wait a little.
                        try? await Task.sleep(for: .milliseconds(1))
                    }
                    next += 1
                }
            }
        }
    }

    /// Reliable pushes delivered per second, and each node's CPU per push it stored.
    static func pushes(_ fleet: Fleet, cluster: LocalRedisCluster, settings: BenchSettings) async throws -> ShapeRun {
        let delivered = BenchCounter()
        let consumers = fleet.clients.map { bench in
            let stream = bench.client.pushes(topic: FleetBenchmark.topic)
            return Task { for await _ in stream { delivered.add() } }
        }
        let producing = BenchCounter()
        let published = BenchCounter()
        let producerTasks = startProducers(fleet, producing: producing, published: published)
        // Nothing keeps running when a step throws.
        defer {
            producing.stop()
            for consumer in consumers { consumer.cancel() }
        }
        let probes = try cluster.nodes.map { try RedisProbe(port: $0.port) }
        let window = try await measureWindow(of: delivered, probes: probes, settings: settings)
        producing.stop()
        for task in producerTasks { await task.value }
        // Every push stored reaches its client before the requests are measured (bounded).
        let drained = ContinuousClock.now + .seconds(10)
        while delivered.value < published.value, ContinuousClock.now < drained {
            try await Task.sleep(for: .milliseconds(10))
        }
        for consumer in consumers { consumer.cancel() }
        for consumer in consumers { await consumer.value }
        let work = window.work
        let primaries = cluster.shards.count
        let stored = work.prefix(primaries).map { $0.count("xadd") }
        let total = Double(max(1, stored.reduce(0, +)))
        let count = window.divisor
        return ShapeRun(
            pushRate: window.rate, storedPerPrimary: stored,
            // A primary that stored nothing has no figure (NaN), rather than its idle CPU over one push.
            primaryCPUPerPush: zip(work.prefix(primaries), stored).map {
                $1 > 0 ? $0.cpuSeconds * 1e6 / Double($1) : .nan
            },
            replicaCPUPerPush: work.dropFirst(primaries).map(\.cpuSeconds).reduce(0, +) * 1e6 / total,
            serverCPUPerPush: window.serverCPU.inMicroseconds / count,
            pushCPUByRole: window.roles.mapValues { $0.inMicroseconds / count },
            // The produce script runs XLEN once per call, whatever the pushes it carries.
            pushesPerProduceCall: total / Double(max(1, work.prefix(primaries).map { $0.count("xlen") }.reduce(0, +))))
    }

    /// Requests per second, ``inFlightPerClient`` in flight on every client, and Redis's and the
    /// servers' CPU per request.
    static func requests(
        _ fleet: Fleet, cluster: LocalRedisCluster, settings: BenchSettings, into shape: inout ShapeRun
    ) async throws {
        let answered = BenchCounter()
        let calling = BenchCounter()
        let callers = fleet.clients.flatMap { bench in
            (0..<inFlightPerClient).map { _ in
                Task {
                    while !calling.isStopped {
                        do {
                            _ = try await bench.client.request("echo", payload: benchPayload)
                            answered.add()
                        } catch {
                            try? await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
            }
        }
        defer { calling.stop() }
        let probes = try cluster.shards.map { try RedisProbe(port: $0.primary.port) }
        let window = try await measureWindow(of: answered, probes: probes, settings: settings)
        calling.stop()
        for caller in callers { await caller.value }
        let count = window.divisor
        shape.requestRate = window.rate
        shape.primaryCPUPerRequest = window.work.map(\.cpuSeconds).reduce(0, +) * 1e6 / count
        shape.serverCPUPerRequest = window.serverCPU.inMicroseconds / count
        shape.requestCPUByRole = window.roles.mapValues { $0.inMicroseconds / count }
    }

    /// With producers publishing for every principal, kills the primary of the first principal's
    /// slot and times, from the kill, the first publish stored and the first request answered for
    /// that principal (each attempt started after the kill), and the replica's promotion.
    static func failover(_ fleet: Fleet, cluster: LocalRedisCluster, settings: BenchSettings) async throws
        -> FailoverRun
    {
        let shard = fleet.shardOf[0]
        let victim = fleet.names[0]
        let client = fleet.clients[0].client
        let server = fleet.producer.server
        let replicaPort = cluster.shards[shard].replica.port
        let producing = BenchCounter()
        let producerTasks = startProducers(fleet, producing: producing, published: BenchCounter())
        defer { producing.stop() }
        try await Task.sleep(for: settings.warmUp)
        let clock = ContinuousClock()
        let killed = clock.now
        await cluster.shards[shard].primary.kill()
        async let produce = firstSuccess(after: killed) {
            _ = try await server.push(to: victim, topic: FleetBenchmark.topic, payload: FleetBenchmark.payload)
        }
        async let request = firstSuccess(after: killed) {
            _ = try await client.request("echo", payload: benchPayload, options: RequestOptions(timeout: .seconds(5)))
        }
        async let promotion = firstSuccess(after: killed) {
            let probe = try RedisProbe(port: replicaPort)
            guard try probe.info("replication")["role"] == "master" else { throw BenchError("not promoted yet") }
        }
        let result = try await FailoverRun(produce: produce, request: request, promotion: promotion)
        producing.stop()
        for task in producerTasks { await task.value }
        return result
    }

    /// Milliseconds from `killed` to the first call of `attempt` that succeeds, tried again every 5 ms
    /// after a failure, for at most 30 s.
    private static func firstSuccess(
        after killed: ContinuousClock.Instant, _ attempt: @Sendable () async throws -> Void
    )
        async throws -> Double
    {
        while true {
            do {
                try await attempt()
                return (ContinuousClock.now - killed).inMilliseconds
            } catch {
                guard ContinuousClock.now - killed < .seconds(30) else {
                    throw BenchError("no success within 30 s of the kill: \(error)")
                }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }
}
