/// Pub/sub as the stores use it: on one Redis (``RedisSubscriber``), or sharded over the
/// primaries of a cluster (``RedisClusterSubscriber``). Either reports its events to the callback
/// it was made with (see ``RedisSubscriber/Event``): messages, and ``RedisSubscriber/Event/subscribed``
/// whenever notices may have been missed.
protocol RedisNoticeSubscriber: Actor {
    /// Starts the subscription's supervision (once) and returns when its first attempt has ended.
    func start() async
    /// Subscribes to `channel` or unsubscribes from it as `wanted` says, read when the subscriber
    /// acts (it says the truth whenever read: the owner calls again after each change); returns
    /// once Redis confirmed it, or at once while disconnected.
    func update(_ channel: String, wanted: @escaping @Sendable () -> Bool) async
    /// Closes the connections; no event follows the ones under way.
    func shutdown() async
}
