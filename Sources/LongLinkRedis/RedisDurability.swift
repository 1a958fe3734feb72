internal import LongLinkWire

/// When a write the stores make counts as done: once the primary has it, or once replicas
/// have it too.
///
/// Redis replicates asynchronously: a primary that dies may take its last writes with it, and the
/// replica that takes over never had them. With ``replicated(_:)`` each produce call and each
/// batch of stored replies is followed by `WAIT n` on the same connection, and a push or a reply
/// is acknowledged only once `n` replicas have it, so a single failover loses nothing
/// acknowledged. It costs a replica round trip per batch (group commit batches the waits).
public struct RedisDurability: Sendable, Equatable, CustomStringConvertible {
    /// How many replicas must have a write before it is acknowledged; 0: none.
    public let replicas: Int

    /// Acknowledged once the primary has it (the default). On a cluster, a principal whose log
    /// may have lost writes in a failover starts a new epoch (see ``RedisPushStore``).
    public static let asynchronous = RedisDurability(replicas: 0)

    /// Acknowledged once `replicas` replicas have it (`WAIT`); a write they do not confirm within
    /// the command timeout fails `unavailable` (it may still be stored, as after a timeout).
    public static func replicated(_ replicas: Int) -> RedisDurability { RedisDurability(replicas: replicas) }

    public var description: String { replicas == 0 ? "asynchronous" : "replicated(\(replicas))" }

    /// The `WAIT` that follows a write: it answers within half of `timeout`, so that its reply
    /// arrives before the command's own timeout closes the connection.
    static func wait(_ replicas: Int, within timeout: Duration) -> RedisCommand {
        let (seconds, attoseconds) = (timeout / 2).components
        let milliseconds = max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        return RedisCommand("WAIT", String(replicas), String(milliseconds))
    }

    /// Throws `unavailable` unless `reply` (to ``wait(_:within:)``) counts `replicas` replicas.
    static func check(_ reply: RESPValue, replicas: Int) throws(LongLinkError) {
        guard let count = try reply.checked("WAIT").int64 else { throw .redisUnexpected("WAIT", reply) }
        guard count >= replicas else {
            throw .redisUnavailable(
                "written on the primary but acknowledged by \(count) of \(replicas) replicas in time; it may be lost")
        }
    }
}
