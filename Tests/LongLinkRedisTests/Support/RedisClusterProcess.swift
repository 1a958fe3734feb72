import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// A Redis Cluster of the test's own: the shared launcher's (`LocalRedisCluster`: six
/// cluster-enabled `redis-server`s on free ports in their own temporary directories, without
/// persistence, three primaries with one replica each), each node a ``RedisServerProcess``, stopped
/// by process id.
final class RedisClusterProcess: Sendable {
    let cluster: LocalRedisCluster
    let nodes: [RedisServerProcess]

    private init(_ cluster: LocalRedisCluster) {
        self.cluster = cluster
        self.nodes = cluster.nodes.map { RedisServerProcess($0) }
    }

    /// Every node, as seeds for ``RedisClusterClient``.
    var seeds: [RedisConfiguration] { nodes.map(\.configuration) }

    /// Starts six nodes, joins them and waits (bounded) until every node says `cluster_state:ok`
    /// and every replica is in sync. Stops what it started when any step fails.
    static func start() async throws -> RedisClusterProcess {
        guard let binary = RedisServerProcess.binary else { throw RedisServerProcess.Missing() }
        return RedisClusterProcess(
            try await LocalRedisCluster.start(primaries: 3, binary: binary, freePort: { try await freePort() }))
    }

    /// Runs one command on one node (not routed).
    func run(_ command: RedisCommand, on node: RedisServerProcess) async throws -> RESPValue {
        let client = RedisClient(configuration: node.configuration)
        do {
            let reply = try await client.run(command)
            await client.shutdown()
            return reply
        } catch {
            await client.shutdown()
            throw error
        }
    }

    /// Starts moving `slot` from `source`'s primary to `target`'s (`CLUSTER SETSLOT … IMPORTING`
    /// on the target, `MIGRATING` on the source): keys the source no longer has are asked of the
    /// target (`ASK`).
    func startMigrating(
        slot: Int, from source: ClusterTopology.Shard, to target: ClusterTopology.Shard
    ) async throws {
        _ = try await run(
            RedisCommand("CLUSTER", "SETSLOT", "\(slot)", "IMPORTING", source.primary.id), on: try node(target.primary))
        _ = try await run(
            RedisCommand("CLUSTER", "SETSLOT", "\(slot)", "MIGRATING", target.primary.id), on: try node(source.primary))
    }

    /// Moves the slot's keys (`MIGRATE`, 100 at a time) and gives the slot to `target`'s primary
    /// on the target, the source and every other primary of `primaries` (`SETSLOT … NODE`): from
    /// then on the source answers `MOVED`.
    func finishMigrating(
        slot: Int, from source: ClusterTopology.Shard, to target: ClusterTopology.Shard,
        primaries: [ClusterTopology.Address]
    ) async throws {
        let from = try node(source.primary)
        let to = try node(target.primary)
        while true {
            let batch =
                try await run(RedisCommand("CLUSTER", "GETKEYSINSLOT", "\(slot)", "100"), on: from)
                .elements?.compactMap(\.string) ?? []
            if batch.isEmpty { break }
            _ = try await run(
                RedisCommand(
                    ["MIGRATE", "127.0.0.1", "\(to.port)", "", "0", "5000", "KEYS"].map { Array($0.utf8) }
                        + batch.map { Array($0.utf8) }), on: from)
        }
        // The target first, then the source, as Redis's resharding does: told the other way
        // round, the two would send commands back and forth meanwhile.
        let others = primaries.filter { $0 != target.primary.address && $0 != source.primary.address }
        for primary in [target.primary.address, source.primary.address] + others {
            _ = try await run(
                RedisCommand("CLUSTER", "SETSLOT", "\(slot)", "NODE", target.primary.id),
                on: try node(primary))
        }
    }

    /// The node process listening at `address`.
    func node(_ address: ClusterTopology.Address) throws -> RedisServerProcess {
        guard let node = nodes.first(where: { $0.port == address.port }) else {
            throw ConditionTimedOut(what: "a node of this cluster at \(address)")
        }
        return node
    }

    func node(_ node: ClusterTopology.Node) throws -> RedisServerProcess { try self.node(node.address) }

    /// Stops every node and removes its directory.
    func stop() async {
        await cluster.stop()
    }
}

/// Runs `body` with a fresh cluster, stopped afterwards whatever happens.
func withRedisCluster(_ body: (RedisClusterProcess) async throws -> Void) async throws {
    let cluster = try await RedisClusterProcess.start()
    do {
        try await body(cluster)
    } catch {
        await cluster.stop()
        throw error
    }
    await cluster.stop()
}
