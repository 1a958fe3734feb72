import LongLinkRedis
import LongLinkServer
import LongLinkWire

/// Where `serve`'s fleet keeps its stores: one Redis, or a Redis Cluster reached through its seeds.
enum ServeRedis: Sendable, CustomStringConvertible {
    /// One Redis (`--redis`).
    case single(RedisConfiguration)
    /// A Redis Cluster (`--redis-cluster`): its seed nodes, each with the same settings.
    case cluster([RedisConfiguration])

    /// The stores of one server.
    func stores() throws(LongLinkError) -> ServerStores {
        switch self {
        case .single(let configuration): try .redis(configuration)
        case .cluster(let seeds): try .redisCluster(seeds)
        }
    }

    /// The Redis, or the cluster's seeds.
    var nodes: [RedisConfiguration] {
        switch self {
        case .single(let configuration): [configuration]
        case .cluster(let seeds): seeds
        }
    }

    /// The settings every node is reached with (the first seed's on a cluster).
    var settings: RedisConfiguration { nodes[0] }

    /// For the startup line: where, never the password.
    var description: String {
        switch self {
        case .single(let configuration):
            "Redis at \(configuration)"
        case .cluster(let seeds):
            "a Redis Cluster of \(seeds.count) seed\(seeds.count == 1 ? "" : "s") ("
                + seeds.map(\.description).joined(separator: ", ") + ")"
        }
    }
}
