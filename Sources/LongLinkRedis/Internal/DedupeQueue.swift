internal import LongLinkServer
internal import LongLinkTransport

/// Group commit of ``RedisDedupeStore``'s claims, or of its stored replies: at most one round trip
/// in flight per queue (one lane for all entries); operations that arrive meanwhile wait and leave
/// together in the next, one pipelined write per batch (one script call per hash tag, see
/// ``RedisDedupeStore/sendBatch(_:backend:running:budgets:sending:)``), at most
/// ``DedupeOperation/maxBatch`` of them. Shutdown sends what is queued: replies already answered to
/// clients are stored, not dropped.
typealias DedupeQueue = GroupCommitQueue<SingleLane, DedupeOperation>

extension DedupeQueue {
    /// A de-dup queue whose batches `send` sends.
    convenience init(
        send:
            @escaping @Sendable (_ batch: [DedupeOperation], _ sending: @escaping @Sendable (Int) -> Void) async -> Void
    ) {
        self.init(
            limits: Limits(items: DedupeOperation.maxBatch), shutdownRule: .sendQueued,
            shutDown: "the Redis de-dup store was shut down", cancelled: "the Redis command was cancelled"
        ) { _, batch, sending in await send(batch, sending) }
    }

    /// Queues `operation` on `entry` and waits for its reply (or for the caller's cancellation).
    func submit(_ entry: DedupeEntryKey, _ operation: DedupeOperation.Kind) async throws(LongLinkError) -> RESPValue {
        try await submit(DedupeOperation(entry: entry, operation: operation))
    }
}
