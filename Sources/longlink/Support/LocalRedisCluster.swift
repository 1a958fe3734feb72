import Foundation
import LongLinkCLISupport
import LongLinkRedis
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A Redis Cluster of the tool's own, for `demo --fleet --redis-cluster` and `soak --fleet
/// --redis-cluster`: six ``LocalRedisServer``s with `--cluster-enabled yes` (each its bus port a
/// free port too), joined by `redis-cli --cluster create … --cluster-replicas 1` into three
/// primaries with a replica each, and stopped by process id.
final class LocalRedisCluster: Sendable {
    /// No `redis-cli` was found.
    struct MissingCLI: Error, CustomStringConvertible {
        var description: String {
            "needs redis-cli beside redis-server or on the PATH: install the Debian package redis-tools"
        }
    }

    /// A primary killed and the replica that took its slots.
    struct Failover: Sendable {
        /// The killed primary's port.
        var killedPort: Int
        /// The promoted replica's port.
        var promotedPort: Int
        /// From the kill until the replica served the slots and the cluster said `ok`.
        var took: Duration
    }

    /// A step of the start or of a failover that did not succeed in time.
    private static func failure(_ text: String) -> LocalRedisServer.StartFailed {
        LocalRedisServer.StartFailed(description: text)
    }

    /// The nodes, a killed one replaced by its restart.
    private let nodes: Mutex<[LocalRedisServer]>
    private let cli: String

    private init(nodes: [LocalRedisServer], cli: String) {
        self.nodes = Mutex(nodes)
        self.cli = cli
    }

    /// `redis-cli`: `LONGLINK_REDIS_CLI` when set, else beside `server`, else on the PATH or in /usr/bin.
    static func locateCLI(
        server: String? = LocalRedisServer.locate(), environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> String? {
        let fileManager = FileManager.default
        if let path = environment["LONGLINK_REDIS_CLI"] {
            return fileManager.isExecutableFile(atPath: path) ? path : nil
        }
        let beside = server.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }
        let directories =
            [beside].compactMap { $0 } + (environment["PATH"] ?? "").split(separator: ":").map(String.init)
            + ["/usr/bin"]
        return directories.map { "\($0)/redis-cli" }.first { fileManager.isExecutableFile(atPath: $0) }
    }

    /// Starts six nodes, creates the cluster and waits (bounded) until every node says
    /// `cluster_state:ok` and every replica is in sync. Stops what it started when a step fails.
    static func start(within timeout: Duration = .seconds(60)) async throws -> LocalRedisCluster {
        guard let server = LocalRedisServer.locate() else { throw LocalRedisServer.Missing() }
        guard let cli = locateCLI(server: server) else { throw MissingCLI() }
        var nodes: [LocalRedisServer] = []
        do {
            for _ in 0..<6 {
                nodes.append(
                    try await LocalRedisServer.start(binary: server) { _ in
                        // The bus port is by default the port + 10000, which may be taken.
                        [
                            "--cluster-enabled", "yes", "--cluster-port", String(try await LocalRedisServer.freePort()),
                            "--cluster-node-timeout", "2000", "--repl-diskless-sync-delay", "0",
                            // A replica cut off from its primary for a while still takes over.
                            "--cluster-replica-validity-factor", "0",
                        ]
                    })
            }
            let cluster = LocalRedisCluster(nodes: nodes, cli: cli)
            let create = try ChildProcess(
                cli, arguments: ["--cluster", "create"] + nodes.map { "127.0.0.1:\($0.port)" } + [
                    "--cluster-replicas", "1", "--cluster-yes",
                ], standardInput: .nullDevice, standardOutput: .nullDevice, standardError: .nullDevice)
            guard await create.waitForExit(within: timeout) == 0 else {
                create.kill()
                throw Self.failure("redis-cli --cluster create did not succeed within \(timeout)")
            }
            for node in nodes {
                try await cluster.waitUntil("node \(node.port) says cluster_state:ok", within: timeout) {
                    await cluster.query(node.port, ["CLUSTER", "INFO"])?.contains("cluster_state:ok") == true
                }
            }
            try await cluster.waitUntil("every primary with a replica in sync", within: timeout) {
                await cluster.replicasInSync()
            }
            return cluster
        } catch {
            for node in nodes { await node.stop() }
            throw error
        }
    }

    /// The ports of the nodes.
    var ports: [Int] { nodes.withLock { $0.map(\.port) } }

    /// The process ids of the nodes.
    var processIdentifiers: [Int32] { nodes.withLock { $0.map(\.processIdentifier) } }

    /// Every node as a seed, with `keyPrefix` and `durability`.
    func seeds(keyPrefix: String, durability: RedisDurability) -> [RedisConfiguration] {
        nodes.withLock { nodes in
            nodes.map {
                var seed = $0.configuration(keyPrefix: keyPrefix)
                seed.durability = durability
                return seed
            }
        }
    }

    /// Kills (SIGKILL) the primary serving the slot of `key` and waits (bounded) until its replica
    /// serves the slot and the cluster says `ok`; then starts the killed node again, which rejoins
    /// as the new primary's replica (waited for, bounded, so that the next failover finds one).
    /// Throws ``LocalRedisServer/StartFailed`` when the primary has no replica in sync, or a step
    /// takes too long.
    func killPrimary(servingSlotOf key: String, within timeout: Duration = .seconds(30)) async throws -> Failover {
        guard let map = await liveNodes() else { throw Self.failure("no node answers CLUSTER NODES") }
        guard let slotText = await query(map.anyPort, ["CLUSTER", "KEYSLOT", key]), let slot = Int(slotText) else {
            throw Self.failure("no node answers CLUSTER KEYSLOT")
        }
        guard let primary = map.entries.first(where: { $0.isPrimary && !$0.failed && $0.serves(slot) }) else {
            throw Self.failure("no primary serves slot \(slot)")
        }
        var replica: ClusterNodesEntry?
        for entry in map.entries where entry.primaryID == primary.id && !entry.failed {
            if await query(entry.port, ["INFO", "replication"])?.contains("master_link_status:up") == true {
                replica = entry
            }
        }
        guard let replica else {
            throw Self.failure("the primary on port \(primary.port) has no replica in sync")
        }
        guard let victim = nodes.withLock({ $0.first { $0.port == primary.port } }) else {
            throw Self.failure("port \(primary.port) is not a node of this cluster")
        }
        let killed = ContinuousClock.now
        victim.killNow()
        try await waitUntil("the replica on port \(replica.port) serving slot \(slot)", within: timeout) {
            guard await self.query(replica.port, ["CLUSTER", "INFO"])?.contains("cluster_state:ok") == true,
                let view = await self.query(replica.port, ["CLUSTER", "NODES"])
            else { return false }
            return ClusterNodesEntry.parse(view).contains { $0.port == replica.port && $0.isPrimary && $0.serves(slot) }
        }
        let took = ContinuousClock.now - killed
        let restarted = try await victim.restarted()
        nodes.withLock { nodes in
            if let index = nodes.firstIndex(where: { $0 === victim }) { nodes[index] = restarted }
        }
        try await waitUntil("node \(restarted.port) back as a replica in sync", within: timeout) {
            await self.replicasInSync()
        }
        return Failover(killedPort: primary.port, promotedPort: replica.port, took: took)
    }

    /// Kills every node, waits (bounded) for each and removes their directories.
    func stop() async {
        for node in nodes.withLock({ $0 }) { await node.stop() }
    }

    /// Kills every node and exits with 128 + the signal on SIGINT or SIGTERM. Cancel the watcher when done.
    func stopOnSignals() -> SignalWatcher {
        SignalWatcher([SIGINT, SIGTERM]) { [self] number in
            for node in nodes.withLock({ $0 }) {
                node.killNow()
                try? FileManager.default.removeItem(at: node.directory)
            }
            exit(128 + number)
        }
    }

    /// Whether every node runs and every primary serving slots has a replica with its data (a
    /// node just joined, or just back, says `role:master` until it is made a replica).
    private func replicasInSync() async -> Bool {
        guard let map = await liveNodes(), map.entries.count == 6, !map.entries.contains(where: \.failed) else {
            return false
        }
        for primary in map.entries where primary.isPrimary && !primary.slots.isEmpty {
            var inSync = false
            for replica in map.entries where replica.primaryID == primary.id {
                if await query(replica.port, ["INFO", "replication"])?.contains("master_link_status:up") == true {
                    inSync = true
                }
            }
            guard inSync else { return false }
        }
        return true
    }

    /// The cluster as the first node that answers sees it.
    private func liveNodes() async -> (entries: [ClusterNodesEntry], anyPort: Int)? {
        for node in nodes.withLock({ $0 }) where node.isRunning {
            if let text = await query(node.port, ["CLUSTER", "NODES"]) {
                return (ClusterNodesEntry.parse(text), node.port)
            }
        }
        return nil
    }

    /// Polls `condition` every 100 ms until it holds or `timeout` passes: the nodes are other
    /// processes, with nothing to await on.
    private func waitUntil(_ what: String, within timeout: Duration, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while await !condition() {
            guard ContinuousClock.now < deadline else { throw Self.failure("\(what): not within \(timeout)") }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// One command's reply as redis-cli prints it (bounded); nil when the node does not answer.
    private func query(_ port: Int, _ arguments: [String]) async -> String? {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-redis-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: output) }
        guard
            let process = try? ChildProcess(
                cli, arguments: ["-h", "127.0.0.1", "-p", String(port)] + arguments, standardInput: .nullDevice,
                standardOutput: .file(output.path), standardError: .nullDevice)
        else { return nil }
        guard await process.waitForExit(within: .seconds(5)) == 0 else {
            process.kill()
            return nil
        }
        guard let text = try? String(contentsOf: output, encoding: .utf8), !text.hasPrefix("ERR"),
            !text.hasPrefix("Could not connect")
        else { return nil }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
