internal import LongLinkServer
internal import LongLinkTransport
internal import LongLinkWire

/// Group commit of ``RedisPushStore/append(_:)``: at most one produce call in flight per principal
/// (a lane each, by the name's bytes: two spellings of one name in Unicode are two principals);
/// pushes that arrive meanwhile wait and leave together in the next call, at most
/// ``ProducedPush/maxBatch`` pushes and about ``ProducedPush/maxBatchBytes`` bytes.
///
/// Seqs follow the order of the calls, as a lane's batches leave one after another. Shutdown fails
/// the pushes queued (those in flight end with their call).
typealias ProduceQueue = GroupCommitQueue<PrincipalKey, ProducedPush>

extension ProduceQueue {
    /// A produce queue whose batches, one principal's each, `send` sends.
    convenience init(send: @escaping @Sendable (_ principal: String, _ batch: [ProducedPush]) async -> Void) {
        self.init(
            limits: Limits(items: ProducedPush.maxBatch, bytes: ProducedPush.maxBatchBytes), shutdownRule: .failQueued,
            shutDown: "the Redis push store was shut down", cancelled: "the push's caller was cancelled"
        ) { principal, batch, sending in
            sending(1)
            await send(principal.name, batch)
        }
    }

    /// Queues the push and waits for its seq (or for the caller's cancellation).
    func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush {
        try await submit(ProducedPush(topic: topic, payload: payload), lane: PrincipalKey(principal))
    }

    /// The pushes queued behind the principal's call in flight; nil when none is in flight (tests).
    func queuedCount(_ principal: String) -> Int? {
        queuedCount(PrincipalKey(principal))
    }
}
