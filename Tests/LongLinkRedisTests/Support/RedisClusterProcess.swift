import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// A Redis Cluster of the test's own: six cluster-enabled `redis-server`s (each a
/// ``RedisServerProcess`` on a free port in its own temporary directory, without persistence),
/// joined by `redis-cli --cluster create … --cluster-replicas 1` into three primaries with one
/// replica each, and stopped by process id.
final class RedisClusterProcess: Sendable {
    /// `redis-cli`, beside the `redis-server` in use.
    static let cli: String? = RedisServerProcess.binary.map {
        URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("redis-cli").path
    }.flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

    /// Whether the cluster tests run: as the Redis tests, and under CI even without redis-cli
    /// (where the start then fails rather than skips).
    static let cliEnabled: Bool = {
        if cli != nil || ProcessInfo.processInfo.environment["CI"] != nil { return true }
        print("LongLinkRedisTests: redis-cli not found beside redis-server; the Redis Cluster tests are skipped")
        return false
    }()

    struct CLIFailed: Error, CustomStringConvertible {
        var arguments: [String]
        var status: Int32?
        var description: String {
            "redis-cli \(arguments.joined(separator: " ")) ended with \(status.map(String.init) ?? "no exit")"
        }
    }

    let nodes: [RedisServerProcess]

    private init(nodes: [RedisServerProcess]) {
        self.nodes = nodes
    }

    /// Every node, as seeds for ``RedisClusterClient``.
    var seeds: [RedisConfiguration] { nodes.map(\.configuration) }

    /// Starts six nodes, creates the cluster and waits (bounded) until every node says
    /// `cluster_state:ok`. Stops what it started when any step fails.
    static func start() async throws -> RedisClusterProcess {
        var nodes: [RedisServerProcess] = []
        do {
            for _ in 0..<6 {
                nodes.append(try await startNode())
            }
            let cluster = RedisClusterProcess(nodes: nodes)
            try await cluster.cli(
                ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                    "--cluster-replicas", "1", "--cluster-yes",
                ])
            try await cluster.waitUntilOK()
            return cluster
        } catch {
            for node in nodes { await node.stop() }
            throw error
        }
    }

    /// Starts one node. The bus port is chosen as the port is (by default it is the port + 10000,
    /// which may be one another test was handed, or in the kernel's ephemeral range), and another
    /// is tried when the node cannot bind the one it was given.
    private static func startNode() async throws -> RedisServerProcess {
        var lastError: (any Error)?
        for _ in 0..<3 {
            let bus = try await freePort()
            do {
                return try await RedisServerProcess.start(
                    .init(arguments: { port in
                        [
                            "--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file",
                            "nodes-\(port).conf", "--cluster-node-timeout", "2000", "--cluster-port", String(bus),
                            // Replicas sync at once, so that a failover can happen right after the start.
                            "--repl-diskless-sync-delay", "0",
                            // A replica cut off from its primary for a while still takes over.
                            "--cluster-replica-validity-factor", "0",
                        ]
                    }))
            } catch {
                lastError = error
            }
        }
        throw lastError!
    }

    /// Runs redis-cli with `arguments` and waits (bounded) for it to succeed.
    func cli(_ arguments: [String], within timeout: Duration = .seconds(60)) async throws {
        guard let cli = Self.cli else { throw RedisServerProcess.Missing() }
        let process = try ChildProcess(
            cli, arguments: arguments, standardInput: .nullDevice, standardOutput: .nullDevice,
            standardError: .nullDevice)
        let status = await process.waitForExit(within: timeout)
        guard status == 0 else {
            process.kill()
            throw CLIFailed(arguments: arguments, status: status)
        }
    }

    /// Waits (bounded) until every running node's `CLUSTER INFO` says `cluster_state:ok` and every
    /// replica has its primary's data (a replica that never synced does not take over).
    func waitUntilOK(within timeout: Duration = .seconds(30)) async throws {
        for node in nodes where node.process.isRunning {
            try await eventually("node \(node.port) says cluster_state:ok", within: timeout) {
                let info = try? await run(RedisCommand("CLUSTER", "INFO"), on: node).string
                guard info?.contains("cluster_state:ok") == true else { return false }
                let replication = try? await run(RedisCommand("INFO", "replication"), on: node).string
                return replication?.contains("role:master") == true
                    || replication?.contains("master_link_status:up") == true
            }
        }
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
        for node in nodes { await node.stop() }
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
