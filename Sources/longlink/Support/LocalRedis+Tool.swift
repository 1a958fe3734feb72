import Foundation
import LongLinkCLISupport
import LongLinkRedis
@_spi(Benchmarks) import LongLinkTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// What the tool adds to the shared `redis-server` launchers (LongLinkCLISupport): where LongLink
// finds them, and stopping them on a signal.
extension LocalRedisServer {
    /// A redis-server with AOF on, on a free port below the ephemeral range.
    static func start() async throws -> LocalRedisServer {
        try await start(freePort: { try await freePort() })
    }

    /// Where LongLink finds it, with `keyPrefix`.
    func configuration(keyPrefix: String) -> RedisConfiguration {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: port)
        configuration.keyPrefix = keyPrefix
        return configuration
    }

    /// Kills redis-server and exits with 128 + the signal on SIGINT or SIGTERM, so that an
    /// interrupted demo or soak leaves no redis-server behind. Cancel the watcher when done.
    func stopOnSignals() -> SignalWatcher {
        SignalWatcher([SIGINT, SIGTERM]) { [self] number in
            killNow()
            try? FileManager.default.removeItem(at: directory)
            exit(128 + number)
        }
    }
}

extension LocalRedisCluster {
    /// Three primaries with a replica each, on free ports below the ephemeral range.
    static func start() async throws -> LocalRedisCluster {
        try await start(primaries: 3, freePort: { try await freePort() })
    }

    /// The process ids of the nodes.
    var processIdentifiers: [Int32] { nodes.map(\.processIdentifier) }

    /// Every node as a seed, with `keyPrefix` and `durability`.
    func seeds(keyPrefix: String, durability: RedisDurability) -> [RedisConfiguration] {
        nodes.map {
            var seed = $0.configuration(keyPrefix: keyPrefix)
            seed.durability = durability
            return seed
        }
    }

    /// Kills every node and exits with 128 + the signal on SIGINT or SIGTERM. Cancel the watcher when done.
    func stopOnSignals() -> SignalWatcher {
        SignalWatcher([SIGINT, SIGTERM]) { [self] number in
            for node in nodes {
                node.killNow()
                try? FileManager.default.removeItem(at: node.directory)
            }
            exit(128 + number)
        }
    }
}
