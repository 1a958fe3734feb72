import Foundation
import Synchronization

/// A Redis Cluster of our own, for the tool (`demo --fleet --redis-cluster`, `soak --fleet
/// --redis-cluster`), the tests and the benchmarks: `primaries` primaries with one replica each,
/// ``LocalRedisServer``s started with `--cluster-enabled yes` (each its bus port a free port too,
/// since the default, the port + 10000, may be taken), without persistence, joined by
/// `CLUSTER ADDSLOTSRANGE`, `MEET` and `REPLICATE` (which, unlike `redis-cli --cluster create`,
/// takes fewer than three primaries and needs no redis-cli), and stopped by process id.
package final class LocalRedisCluster: Sendable {
    /// A primary as the cluster was started, the slots it was given and its replica.
    package struct Shard: Sendable {
        package var primary: LocalRedisServer
        package var replica: LocalRedisServer
        package var slots: ClosedRange<Int>
    }

    /// A primary killed and the replica that took its slots.
    package struct Failover: Sendable {
        /// The killed primary's port.
        package var killedPort: Int
        /// The promoted replica's port.
        package var promotedPort: Int
        /// From the kill until the replica served the slots and the cluster said `ok`.
        package var took: Duration
    }

    /// The shards as started (a failover swaps a primary and its replica, see
    /// ``killPrimary(servingSlotOf:within:)``).
    package let shards: [Shard]

    private init(shards: [Shard]) {
        self.shards = shards
    }

    /// Every node, primaries first (as started).
    package var nodes: [LocalRedisServer] { shards.map(\.primary) + shards.map(\.replica) }

    /// The ports of the nodes.
    package var ports: [Int] { nodes.map(\.port) }

    /// Starts `primaries` primaries and as many replicas on ports from `freePort`, gives each
    /// primary an equal range of the 16,384 slots and waits (bounded) until every node says
    /// `cluster_state:ok` and every replica has its primary's data. Stops what it started when a
    /// step fails. Throws ``LocalRedisServer/Missing`` without a binary.
    package static func start(
        primaries: Int = 3, binary: String? = LocalRedisServer.locate(),
        freePort: @escaping @Sendable () async throws -> Int, within timeout: Duration = .seconds(60)
    ) async throws -> LocalRedisCluster {
        var started: [(node: LocalRedisServer, bus: Int)] = []
        do {
            for _ in 0..<(2 * primaries) {
                // A node that cannot bind its bus port exits; the next attempt gets other ports.
                let bus = Mutex(0)
                let node = try await LocalRedisServer.start(binary: binary, appendOnly: false, freePort: freePort) {
                    _ in
                    let port = try await freePort()
                    bus.withLock { $0 = port }
                    return [
                        "--cluster-enabled", "yes", "--cluster-port", String(port), "--cluster-node-timeout", "2000",
                        // Replicas sync at once, and one cut off for a while still takes over.
                        "--repl-diskless-sync-delay", "0", "--cluster-replica-validity-factor", "0",
                    ]
                }
                started.append((node, bus.withLock { $0 }))
            }
            let shards = (0..<primaries).map { index in
                Shard(
                    primary: started[index].node, replica: started[primaries + index].node,
                    slots: (index * 16_384 / primaries)...((index + 1) * 16_384 / primaries - 1))
            }
            let cluster = LocalRedisCluster(shards: shards)
            try await cluster.join(buses: started.map(\.bus), within: timeout)
            return cluster
        } catch {
            for node in started { await node.node.stop() }
            throw error
        }
    }

    /// Waits (bounded) until every running node says `cluster_state:ok` and every primary serving
    /// slots has a replica in sync (a replica that never synced does not take over).
    package func waitUntilOK(within timeout: Duration = .seconds(30)) async throws {
        try await waitUntil("every node says cluster_state:ok, every primary with a replica in sync", within: timeout) {
            self.isOK()
        }
    }

    /// Kills (SIGKILL) the primary serving the slot of `key` and waits (bounded) until its replica
    /// serves the slot and the cluster says `ok`; then starts the killed node again, which rejoins
    /// as the new primary's replica (waited for, bounded, so that the next failover finds one).
    /// Throws ``LocalRedisServer/StartFailed`` when the primary has no replica in sync, or a step
    /// takes too long.
    package func killPrimary(servingSlotOf key: String, within timeout: Duration = .seconds(30)) async throws
        -> Failover
    {
        guard let map = liveNodes() else { throw LocalRedisServer.StartFailed("no node answers CLUSTER NODES") }
        guard case .integer(let slot)? = RedisProbe.ask(port: map.anyPort, ["CLUSTER", "KEYSLOT", key]) else {
            throw LocalRedisServer.StartFailed("no node answers CLUSTER KEYSLOT")
        }
        guard let primary = map.entries.first(where: { $0.isPrimary && !$0.failed && $0.serves(slot) }) else {
            throw LocalRedisServer.StartFailed("no primary serves slot \(slot)")
        }
        let replica = map.entries.first { $0.primaryID == primary.id && !$0.failed && Self.inSync($0.port) }
        guard let replica else {
            throw LocalRedisServer.StartFailed("the primary on port \(primary.port) has no replica in sync")
        }
        guard let victim = nodes.first(where: { $0.port == primary.port }) else {
            throw LocalRedisServer.StartFailed("port \(primary.port) is not a node of this cluster")
        }
        let killed = ContinuousClock.now
        await victim.kill()
        try await waitUntil("the replica on port \(replica.port) serving slot \(slot)", within: timeout) {
            guard Self.says(replica.port, "cluster_state:ok"),
                let view = RedisProbe.ask(port: replica.port, ["CLUSTER", "NODES"])?.text
            else { return false }
            return ClusterNodesEntry.parse(view).contains { $0.port == replica.port && $0.isPrimary && $0.serves(slot) }
        }
        let took = ContinuousClock.now - killed
        try await victim.restart()
        try await waitUntilOK(within: timeout)
        return Failover(killedPort: primary.port, promotedPort: replica.port, took: took)
    }

    /// Kills every node, waits (bounded) for each and removes their directories.
    package func stop() async {
        for node in nodes { await node.stop() }
    }

    private func join(buses: [Int], within timeout: Duration) async throws {
        let nodes = self.nodes
        let probes = try nodes.map { try RedisProbe(port: $0.port) }
        let ids = try probes.map { probe in
            guard let id = try probe.command(["CLUSTER", "MYID"]).text else {
                throw LocalRedisServer.StartFailed("CLUSTER MYID: no id")
            }
            return id
        }
        // A distinct config epoch per node before they meet, as `redis-cli --cluster create`
        // sets: nodes that meet with equal epochs settle the collision by bumping one of them
        // later, and a replica that has not heard of its primary's new epoch before the primary
        // dies asks for votes with the old one and is refused by every primary, for as long as
        // the test waits.
        for (index, probe) in probes.enumerated() {
            try expectOK(probe.command(["CLUSTER", "SET-CONFIG-EPOCH", String(index + 1)]))
        }
        for (index, shard) in shards.enumerated() {
            try expectOK(
                probes[index].command([
                    "CLUSTER", "ADDSLOTSRANGE", String(shard.slots.lowerBound), String(shard.slots.upperBound),
                ]))
        }
        for index in nodes.indices.dropFirst() {
            try expectOK(
                probes[0].command(["CLUSTER", "MEET", "127.0.0.1", String(nodes[index].port), String(buses[index])]))
        }
        // A replica can follow its primary only once it knows it.
        try await waitUntil("every node knows the others", within: timeout) {
            (try? probes.allSatisfy { probe in
                let lines = (try probe.command(["CLUSTER", "NODES"]).text ?? "").split(whereSeparator: \.isNewline)
                return lines.count == nodes.count && !lines.contains { $0.contains("handshake") }
            }) == true
        }
        for index in shards.indices {
            try expectOK(probes[shards.count + index].command(["CLUSTER", "REPLICATE", ids[index]]))
        }
        try await waitUntilOK(within: timeout)
    }

    /// Whether every running node says `cluster_state:ok` and every primary serving slots has a
    /// replica in sync (a node just joined, or just back, says `role:master` until made a replica).
    private func isOK() -> Bool {
        guard let map = liveNodes(), map.entries.count == nodes.count, !map.entries.contains(where: \.failed) else {
            return false
        }
        for node in nodes where node.isRunning {
            guard Self.says(node.port, "cluster_state:ok") else { return false }
        }
        for primary in map.entries where primary.isPrimary && !primary.slots.isEmpty {
            guard map.entries.contains(where: { $0.primaryID == primary.id && Self.inSync($0.port) }) else {
                return false
            }
        }
        return true
    }

    /// The cluster as the first node that answers sees it.
    private func liveNodes() -> (entries: [ClusterNodesEntry], anyPort: Int)? {
        for node in nodes where node.isRunning {
            if let text = RedisProbe.ask(port: node.port, ["CLUSTER", "NODES"])?.text {
                return (ClusterNodesEntry.parse(text), node.port)
            }
        }
        return nil
    }

    /// Whether the node on `port` answers `CLUSTER INFO` with `text` in it.
    private static func says(_ port: Int, _ text: String) -> Bool {
        RedisProbe.ask(port: port, ["CLUSTER", "INFO"])?.text?.contains(text) == true
    }

    /// Whether the replica on `port` has its primary's data (`master_link_status:up`).
    private static func inSync(_ port: Int) -> Bool {
        RedisProbe.ask(port: port, ["INFO", "replication"])?.text?.contains("master_link_status:up") == true
    }

    private func expectOK(_ reply: RedisReply) throws {
        guard case .simple("OK") = reply else { throw LocalRedisServer.StartFailed("cluster setup: \(reply)") }
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` passes: the nodes are other
    /// processes, with nothing to await on.
    private func waitUntil(_ what: String, within timeout: Duration, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else {
                throw LocalRedisServer.StartFailed("Redis Cluster: \(what): not within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
