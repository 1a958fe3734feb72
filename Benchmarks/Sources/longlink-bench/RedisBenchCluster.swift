import Foundation
import LongLinkRedis
@_spi(Benchmarks) import LongLinkTesting

/// A Redis Cluster of the benchmark's own, of any number of primaries, each with one replica:
/// ``RedisBenchServer``s started with `--cluster-enabled yes` (each its bus port a free port too),
/// joined by the benchmark itself (`CLUSTER ADDSLOTSRANGE`, `MEET`, `REPLICATE`) rather than by
/// `redis-cli --cluster create`, which refuses fewer than three primaries. Stopped by pid.
final class RedisBenchCluster: Sendable {
    /// A primary, the slots it was given and its replica.
    struct Shard: Sendable {
        var primary: RedisBenchServer
        var replica: RedisBenchServer
        var slots: ClosedRange<Int>
    }

    let shards: [Shard]

    private init(shards: [Shard]) {
        self.shards = shards
    }

    /// Every node, primaries first.
    var nodes: [RedisBenchServer] { shards.map(\.primary) + shards.map(\.replica) }

    /// Starts `primaries` primaries and as many replicas, gives each primary an equal range of the
    /// 16,384 slots and waits (bounded) until every node says `cluster_state:ok` and every replica
    /// has its primary's data. Stops what it started when a step fails.
    static func start(_ tools: RedisTools, primaries: Int, within timeout: Duration = .seconds(60)) async throws
        -> RedisBenchCluster
    {
        var started: [(node: RedisBenchServer, bus: Int)] = []
        do {
            for _ in 0..<(2 * primaries) {
                let bus = try await freePort()
                let node = try await RedisBenchServer.start(
                    tools,
                    extraArguments: [
                        "--cluster-enabled", "yes", "--cluster-port", String(bus), "--cluster-node-timeout", "2000",
                        // Replicas sync at once, and one cut off for a while still takes over.
                        "--repl-diskless-sync-delay", "0", "--cluster-replica-validity-factor", "0",
                    ])
                started.append((node, bus))
            }
            let shards = (0..<primaries).map { index in
                Shard(
                    primary: started[index].node, replica: started[primaries + index].node,
                    slots: (index * 16_384 / primaries)...((index + 1) * 16_384 / primaries - 1))
            }
            let cluster = RedisBenchCluster(shards: shards)
            try await cluster.join(buses: started.map(\.bus), within: timeout)
            return cluster
        } catch {
            for node in started { await node.node.stop() }
            throw error
        }
    }

    /// Every node as a seed, with `keyPrefix` (writes acknowledged by the primary alone).
    func seeds(keyPrefix: String) -> [RedisConfiguration] {
        nodes.map { node in
            var seed = RedisConfiguration(host: "127.0.0.1", port: node.port)
            seed.keyPrefix = keyPrefix
            seed.durability = .asynchronous
            return seed
        }
    }

    /// The index in ``shards`` of the primary serving `principal`'s keys (its hash tag's slot, asked
    /// of Redis), as the cluster was started.
    func shardIndex(ofPrincipal principal: String) throws -> Int {
        let probe = try RedisProbe(port: shards[0].primary.port)
        guard case .integer(let slot) = try probe.command(["CLUSTER", "KEYSLOT", "{p:\(principal)}"]),
            let index = shards.firstIndex(where: { $0.slots.contains(slot) })
        else { throw BenchError("no slot for principal \(principal)") }
        return index
    }

    /// Stops every node by its pid.
    func stop() async {
        for node in nodes { await node.stop() }
    }

    private func join(buses: [Int], within timeout: Duration) async throws {
        let nodes = self.nodes
        let probes = try nodes.map { try RedisProbe(port: $0.port) }
        let ids = try probes.map { probe in
            guard let id = try probe.command(["CLUSTER", "MYID"]).text else { throw BenchError("CLUSTER MYID") }
            return id
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
            try probes.allSatisfy { probe in
                let text = try probe.command(["CLUSTER", "NODES"]).text ?? ""
                let lines = text.split(whereSeparator: \.isNewline)
                return lines.count == nodes.count && !lines.contains { $0.contains("handshake") }
            }
        }
        for index in shards.indices {
            try expectOK(probes[shards.count + index].command(["CLUSTER", "REPLICATE", ids[index]]))
        }
        try await waitUntil("every node says cluster_state:ok, every replica in sync", within: timeout) {
            for (index, probe) in probes.enumerated() {
                guard try probe.command(["CLUSTER", "INFO"]).text?.contains("cluster_state:ok") == true else {
                    return false
                }
                if index >= shards.count, try probe.info("replication")["master_link_status"] != "up" { return false }
            }
            return true
        }
    }

    private func expectOK(_ reply: RedisReply) throws {
        guard case .simple("OK") = reply else { throw BenchError("cluster setup: \(reply)") }
    }

    /// Polls `condition` every 50 ms until it holds or `timeout` passes: the nodes are other
    /// processes, with nothing to await on.
    private func waitUntil(_ what: String, within timeout: Duration, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while try !condition() {
            guard ContinuousClock.now < deadline else {
                throw BenchError("Redis Cluster: \(what): not within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
