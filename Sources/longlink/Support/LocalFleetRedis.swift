import LongLinkCLISupport
import LongLinkRedis
import LongLinkServer

/// The Redis a `demo --fleet` or `soak --fleet` starts for its servers: one ``LocalRedisServer``,
/// or with `--redis-cluster` a ``LocalRedisCluster`` on which writes wait for one replica
/// (`.replicated(1)`), so that a primary's failover loses nothing acknowledged.
enum LocalFleetRedis: Sendable, CustomStringConvertible {
    case server(LocalRedisServer)
    case cluster(LocalRedisCluster)

    /// Starts a redis-server, or a six-node cluster when `cluster` is true.
    static func start(cluster: Bool) async throws -> LocalFleetRedis {
        cluster ? .cluster(try await LocalRedisCluster.start()) : .server(try await LocalRedisServer.start())
    }

    /// Makes each server's stores, keys under `keyPrefix`.
    func stores(keyPrefix: String) -> @Sendable () throws -> ServerStores {
        switch self {
        case .server(let server):
            let configuration = server.configuration(keyPrefix: keyPrefix)
            return { try .redis(configuration) }
        case .cluster(let cluster):
            let seeds = cluster.seeds(keyPrefix: keyPrefix, durability: .replicated(1))
            return { try .redisCluster(seeds) }
        }
    }

    /// What runs where, for the banner: `redis-server URL (pid P)` or the cluster's ports and pids.
    var description: String {
        switch self {
        case .server(let server):
            "redis-server \(server.url) (pid \(server.processIdentifier))"
        case .cluster(let cluster):
            "a Redis Cluster of 3 primaries and 3 replicas on ports "
                + cluster.ports.map(String.init).joined(separator: ",") + " (pids "
                + cluster.processIdentifiers.map(String.init).joined(separator: ",") + "), writes replicated(1)"
        }
    }

    /// The cluster, when it is one.
    var cluster: LocalRedisCluster? {
        if case .cluster(let cluster) = self { cluster } else { nil }
    }

    /// Stops every redis-server started.
    func stop() async {
        switch self {
        case .server(let server): await server.stop()
        case .cluster(let cluster): await cluster.stop()
        }
    }

    /// Stops every redis-server and exits on SIGINT or SIGTERM. Cancel the watcher when done.
    func stopOnSignals() -> SignalWatcher {
        switch self {
        case .server(let server): server.stopOnSignals()
        case .cluster(let cluster): cluster.stopOnSignals()
        }
    }
}
