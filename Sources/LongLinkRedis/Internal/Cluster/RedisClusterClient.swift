internal import LongLinkTransport
internal import LongLinkWire

/// Commands to a Redis Cluster: each goes to the primary serving its keys' slot, over one
/// ``RedisClient`` per node (which opens its connection when first needed and reconnects with
/// its backoff). Scripts (``RedisCommandRunner``) go by their keys' slot; a node that does not
/// know one runs it by its source.
///
/// An actor: it owns the slot map and the node clients; ``ClusterRoute`` decides where each
/// command goes and what a reply means. The map is loaded with `CLUSTER SHARDS` from any
/// reachable seed or known node, updated by `MOVED`, and reloaded whole after a node could not
/// be reached or lost its connection. A command is retried only when the reply says it did not
/// run (`MOVED`, `ASK`, `TRYAGAIN`, `CLUSTERDOWN`), within ``RedisConfiguration/commandTimeout``
/// of the first seed; an error from a node's connection fails the command at once, since it may
/// have run.
actor RedisClusterClient: RedisCommandRunner {
    let seeds: [RedisConfiguration]
    let loop: EventLoop
    private var topology: ClusterTopology?
    private var isStale = true
    private var refreshing: Task<Result<ClusterTopology, LongLinkError>, Never>?
    private var nodes: [ClusterTopology.Address: RedisClient] = [:]
    private var isShutDown = false
    /// How many `MOVED` and `ASK` replies were followed, and how often the map was loaded: for
    /// tests and diagnostics.
    private(set) var counts = Counts()

    struct Counts: Sendable, Equatable {
        var moved = 0
        var asked = 0
        var loads = 0
    }

    /// `seeds` are the nodes the map is first loaded from; every node is reached with the first
    /// seed's settings (credentials, TLS, timeouts) and its own host and port.
    init(seeds: [RedisConfiguration], loop: EventLoop = EventLoopGroup.shared.next()) {
        self.seeds = seeds
        self.loop = loop
    }

    /// Sends `commands`, each to its slot's primary (pipelined per node, the nodes at once), and
    /// returns their replies in order; error replies are returned, not thrown. Throws
    /// `invalidArgument` for a command whose keys span several slots, before anything is sent.
    /// With `replicas`, each node's batch (and each command sent again) is followed by `WAIT`.
    func send(_ commands: [RedisCommand], replicas: Int) async throws(LongLinkError) -> [RESPValue] {
        let timeout = seeds.first?.commandTimeout ?? .seconds(2)
        let deadline = ContinuousClock.now + timeout
        let wait = replicas > 0 ? [RedisDurability.wait(replicas, within: timeout)] : []
        var routes: [ClusterRoute] = []
        routes.reserveCapacity(commands.count)
        for command in commands { routes.append(try ClusterRoute(command, deadline: deadline)) }
        let topology = try await currentTopology()
        var groups: [ClusterTopology.Address: [Int]] = [:]
        var later: [(index: Int, action: ClusterRoute.Action)] = []
        for index in routes.indices {
            switch routes[index].target(in: topology) {
            case .node(let address, _): groups[address, default: []].append(index)
            case .unserved: later.append((index, routes[index].unserved(at: .now)))
            }
        }
        var replies = [RESPValue](repeating: .null, count: commands.count)
        for (address, result) in await sendAtOnce(groups.map { ($0.key, $0.value.map { commands[$0] } + wait) }) {
            let sent = groups[address]!
            var received: [RESPValue]
            do throws(LongLinkError) { received = try result.get() } catch { throw lost(address, error) }
            guard received.count == sent.count + wait.count else { throw .redisUnexpected("a pipelined batch", .null) }
            if replicas > 0 { try RedisDurability.check(received.removeLast(), replicas: replicas) }
            for (index, reply) in zip(sent, received) {
                let action = routes[index].received(reply, from: address, at: .now)
                if case .deliver = action { replies[index] = reply } else { later.append((index, action)) }
            }
        }
        for (index, action) in later.sorted(by: { $0.index < $1.index }) {
            replies[index] = try await follow(
                commands[index], route: &routes[index], after: action, replicas: replicas, wait: wait)
        }
        return replies
    }

    /// Reloads the slot map now (sharing a reload already under way) and returns it.
    @discardableResult
    func refreshTopology() async throws(LongLinkError) -> ClusterTopology {
        if isShutDown { throw LongLinkError(code: .shutdown, message: "the Redis cluster client was shut down") }
        if let refreshing { return try await refreshing.value.get() }
        let candidates = candidates()
        // A node that has not yet heard of a failover still names the failed primary: a map whose
        // primaries are all healthy wins over the first one loaded.
        let task = Task { () -> Result<ClusterTopology, LongLinkError> in
            var lastError = LongLinkError.redisUnavailable("no Redis cluster node to load the slot map from")
            var first: ClusterTopology?
            for client in candidates {
                do throws(LongLinkError) {
                    let reply = try await client.run(RedisCommand("CLUSTER", "SHARDS"))
                    let loaded = try ClusterTopology(shardsReply: reply)
                    if loaded.shards.allSatisfy(\.primary.isHealthy) { return .success(loaded) }
                    first = first ?? loaded
                } catch {
                    lastError = error
                }
            }
            if let first { return .success(first) }
            return .failure(.redisUnavailable("no Redis cluster node answered CLUSTER SHARDS", cause: lastError))
        }
        refreshing = task
        let result = await task.value
        refreshing = nil
        let loaded = try result.get()
        counts.loads += 1
        topology = loaded
        isStale = false
        retire(keeping: loaded)
        return loaded
    }

    /// Closes every node's connection; later commands fail with `shutdown`.
    func shutdown() async {
        isShutDown = true
        refreshing?.cancel()
        for client in nodes.values { await client.shutdown() }
        nodes = [:]
    }

    /// Drives one command from `action` (what its last reply meant) until it is answered or fails.
    private func follow(
        _ command: RedisCommand, route: inout ClusterRoute, after action: ClusterRoute.Action, replicas: Int,
        wait: [RedisCommand]
    ) async throws(LongLinkError) -> RESPValue {
        var action = action
        while true {
            switch action {
            case .deliver: break
            case .fail(let error): throw error
            case .resend: counts.asked += 1
            case .moved(let slot, let address):
                counts.moved += 1
                if let moved = topology?.moving(slot: slot, to: address) { topology = moved } else { isStale = true }
            case .refreshAfter(let delay):
                do { try await Task.sleep(for: delay) } catch {
                    throw LongLinkError(code: .cancelled, message: "\(command.name) was cancelled")
                }
                isStale = true
            }
            let topology = try await currentTopology()
            switch route.target(in: topology) {
            case .unserved:
                action = route.unserved(at: .now)
            case .node(let address, let asking):
                let batch = (asking ? [RedisCommand("ASKING"), command] : [command]) + wait
                var replies: [RESPValue]
                do throws(LongLinkError) { replies = try await client(for: address).send(batch) } catch {
                    throw lost(address, error)
                }
                guard replies.count == batch.count else { throw .redisUnexpected(command.name, .null) }
                if !wait.isEmpty { try RedisDurability.check(replies.removeLast(), replicas: replicas) }
                guard let reply = replies.last else { throw .redisUnexpected(command.name, .null) }
                action = route.received(reply, from: address, at: .now)
                if case .deliver = action { return reply }
            }
        }
    }

    /// Each node's batch at once; each result paired with its node.
    private func sendAtOnce(
        _ batches: [(ClusterTopology.Address, [RedisCommand])]
    ) async -> [(ClusterTopology.Address, Result<[RESPValue], LongLinkError>)] {
        if batches.count == 1, let (address, commands) = batches.first {
            let client = client(for: address)
            do throws(LongLinkError) { return [(address, .success(try await client.send(commands)))] } catch {
                return [(address, .failure(error))]
            }
        }
        let sends = batches.map { (address: $0.0, client: client(for: $0.0), commands: $0.1) }
        return await withTaskGroup(of: (ClusterTopology.Address, Result<[RESPValue], LongLinkError>).self) { group in
            for send in sends {
                group.addTask {
                    do throws(LongLinkError) {
                        return (send.address, .success(try await send.client.send(send.commands)))
                    } catch {
                        return (send.address, .failure(error))
                    }
                }
            }
            var results: [(ClusterTopology.Address, Result<[RESPValue], LongLinkError>)] = []
            for await result in group { results.append(result) }
            return results
        }
    }

    /// A node failed to answer: the map is reloaded before the next command, since the node may
    /// be gone and its slots served by a replica now.
    private func lost(_ address: ClusterTopology.Address, _ error: LongLinkError) -> LongLinkError {
        if error.code == .unavailable { isStale = true }
        return error
    }

    private func currentTopology() async throws(LongLinkError) -> ClusterTopology {
        if isShutDown { throw LongLinkError(code: .shutdown, message: "the Redis cluster client was shut down") }
        if !isStale, let topology { return topology }
        return try await refreshTopology()
    }

    /// The primary serving `key`'s slot in the current map (loaded when stale); nil when no
    /// primary serves it.
    func primary(for key: [UInt8]) async throws(LongLinkError) -> ClusterTopology.Address? {
        try await currentTopology().primary(forSlot: ClusterSlot.of(key))?.address
    }

    /// How a node is reached: the first seed's settings with the node's host and port.
    nonisolated func configuration(for address: ClusterTopology.Address) -> RedisConfiguration {
        var configuration = seeds.first ?? RedisConfiguration()
        configuration.host = address.host
        configuration.port = address.port
        return configuration
    }

    private func client(for address: ClusterTopology.Address) -> RedisClient {
        if let client = nodes[address] { return client }
        let client = RedisClient(configuration: configuration(for: address), loop: loop)
        nodes[address] = client
        return client
    }

    /// The nodes to load the map from: the known ones first, then the seeds.
    private func candidates() -> [RedisClient] {
        let known = topology.map { $0.shards.flatMap { [$0.primary] + $0.replicas }.map(\.address) } ?? []
        let seeds = seeds.map { ClusterTopology.Address(host: $0.host, port: $0.port) }
        var seen = Set<ClusterTopology.Address>()
        return (known + seeds).filter { seen.insert($0).inserted }.map { client(for: $0) }
    }

    /// Closes the clients of nodes neither in `topology` nor seeds, so that the clients do not
    /// grow with every node the cluster ever had.
    private func retire(keeping topology: ClusterTopology) {
        var keep = Set(topology.shards.flatMap { [$0.primary] + $0.replicas }.map(\.address))
        keep.formUnion(seeds.map { ClusterTopology.Address(host: $0.host, port: $0.port) })
        for (address, client) in nodes where !keep.contains(address) {
            nodes[address] = nil
            Task { await client.shutdown() }
        }
    }
}
