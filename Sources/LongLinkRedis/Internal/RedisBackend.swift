internal import LongLinkTransport

/// One Redis or a Redis Cluster, as the stores use it: where commands go, how notices are
/// published and heard, and whether a produce checks that its principal's log survived a
/// failover.
struct RedisBackend: Sendable {
    /// Commands and scripts.
    let runner: any RedisCommandRunner
    /// The loop the pub/sub connections run on.
    let loop: EventLoop
    /// `PUBLISH` on one Redis; `SPUBLISH` on a cluster, where a notice is sent only within the
    /// shard serving its channel's slot (and a script may publish only there).
    let publish: [UInt8]
    /// Cluster only: the produce script compares the replication id it last wrote a principal
    /// under with its node's (see ``PushScripts/produce``).
    let checksLineage: Bool
    /// A cluster: keys written by one script call must share a slot.
    let isCluster: Bool
    /// How many replicas confirm a produce or a stored reply (``RedisDurability``).
    let replicas: Int
    private let makeSubscriber:
        @Sendable (EventLoop, @escaping @Sendable (RedisSubscriber.Event) -> Void) -> any RedisNoticeSubscriber

    /// One Redis.
    static func single(_ configuration: RedisConfiguration) -> RedisBackend {
        let client = RedisClient(configuration: configuration)
        return RedisBackend(
            runner: client, loop: client.loop, publish: Array("PUBLISH".utf8), checksLineage: false,
            isCluster: false, replicas: configuration.durability.replicas
        ) { loop, onEvent in
            RedisSubscriber(configuration: configuration, loop: loop, onEvent: onEvent)
        }
    }

    /// A cluster reached first through `seeds`.
    static func cluster(_ seeds: [RedisConfiguration]) -> RedisBackend {
        let cluster = RedisClusterClient(seeds: seeds)
        return RedisBackend(
            runner: cluster, loop: cluster.loop, publish: Array("SPUBLISH".utf8), checksLineage: true,
            isCluster: true, replicas: seeds.first?.durability.replicas ?? 0
        ) { loop, onEvent in
            RedisClusterSubscriber(cluster: cluster, loop: loop, onEvent: onEvent)
        }
    }

    /// A subscriber whose events go to `onEvent` (see ``RedisSubscriber`` for when they come).
    func subscriber(onEvent: @escaping @Sendable (RedisSubscriber.Event) -> Void) -> any RedisNoticeSubscriber {
        makeSubscriber(loop, onEvent)
    }
}
