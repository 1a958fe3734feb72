import BenchCLISupport
import LongLinkRedis
@_spi(Benchmarks) import LongLinkTesting

// The benchmark's Redis Clusters are the shared launcher's (`LocalRedisCluster`): any number of
// primaries, each with one replica, joined by `CLUSTER ADDSLOTSRANGE`, `MEET` and `REPLICATE`
// (`redis-cli --cluster create` refuses fewer than three primaries), stopped by pid.
extension LocalRedisCluster {
    /// Starts `primaries` primaries and as many replicas of `tools`' redis-server (see
    /// `LocalRedisCluster.start(primaries:binary:freePort:within:)`).
    static func start(_ tools: RedisTools, primaries: Int) async throws -> LocalRedisCluster {
        try await start(primaries: primaries, binary: tools.server, freePort: { try await freePort() })
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
}
