internal import LongLinkServer
internal import LongLinkTransport
internal import LongLinkWire

/// Group commit of ``RedisPushStore/append(_:)``: at most one produce call in
/// flight per principal; pushes that arrive meanwhile wait and leave together in the next call.
///
/// Redis spends most of a produce on calling the script, not on the commands inside it, so one call
/// for many pushes multiplies the rate. There is no timer and no waiting for a batch to fill: the
/// first push of a principal with nothing in flight leaves at once, and a batch is whatever queued
/// during the previous round trip (at most ``maxPushes`` pushes and about ``maxBytes`` bytes).
///
/// Seqs follow the order of the calls: pushes queue in call order and one task per principal sends
/// the batches one after another. That task is unstructured, so that no caller's cancellation can
/// cancel a call that carries other callers' pushes: a push once queued is sent, and a cancelled
/// caller only stops waiting for its outcome (it may still be stored, as with any lost reply).
final class ProduceQueue: Sendable {
    /// One push waiting for its seq.
    struct Push: Sendable {
        let topic: String
        let payload: [UInt8]
        let outcome = OneShot<Result<StoredPush, LongLinkError>>()

        var size: Int { topic.utf8.count + payload.count }
    }

    /// Sends one batch for a principal and resumes each push's outcome.
    typealias Send = @Sendable (_ principal: String, _ batch: [Push]) async -> Void

    static let maxPushes = 64
    static let maxBytes = 1 << 20

    private struct State {
        /// The principals with a call in flight, and the pushes queued behind it.
        /// By the name's bytes: two spellings of one name in Unicode are two principals.
        var queued: [PrincipalKey: [Push]] = [:]
        var isShutDown = false
    }

    private let state = Locked(State())
    private let send: Send

    init(send: @escaping Send) {
        self.send = send
    }

    /// Queues the push and waits for its outcome (or for the caller's cancellation).
    func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush {
        let push = Push(topic: topic, payload: payload)
        let key = PrincipalKey(principal)
        let startsSending = state.withLock { state -> Bool? in
            guard !state.isShutDown else { return nil }
            if state.queued[key] != nil {
                state.queued[key]!.append(push)
                return false
            }
            state.queued[key] = [push]
            return true
        }
        guard let startsSending else { throw Self.shutDownError }
        if startsSending {
            Task { await self.sendAll(principal) }
        }
        let outcome = await withTaskCancellationHandler {
            await push.outcome.value()
        } onCancel: {
            push.outcome.resume(.failure(LongLinkError(code: .cancelled, message: "the push's caller was cancelled")))
        }
        return try outcome.get()
    }

    /// Fails every queued push (not those in flight, which end with their call) with `shutdown`;
    /// later appends fail at once.
    func shutdown() {
        let dropped = state.withLock { state -> [Push] in
            state.isShutDown = true
            let dropped = Array(state.queued.values.joined())
            // Empty, not removed: each principal's task still ends its turn after its call.
            state.queued = state.queued.mapValues { _ in [] }
            return dropped
        }
        for push in dropped { push.outcome.resume(.failure(Self.shutDownError)) }
    }

    /// The pushes queued behind the principal's call in flight; nil when none is in flight (tests).
    func queuedCount(_ principal: String) -> Int? {
        state.withLock { $0.queued[PrincipalKey(principal)]?.count }
    }

    /// Sends the principal's batches until none is queued.
    private func sendAll(_ principal: String) async {
        while let batch = nextBatch(principal) {
            await send(principal, batch)
        }
    }

    /// Takes the next batch off the principal's queue, or ends its turn when the queue is empty.
    private func nextBatch(_ principal: String) -> [Push]? {
        let principal = PrincipalKey(principal)
        return state.withLock { state -> [Push]? in
            guard let queue = state.queued[principal], !queue.isEmpty else {
                state.queued[principal] = nil
                return nil
            }
            var count = 0
            var bytes = 0
            // At least one, however large.
            while count < queue.count, count < Self.maxPushes, count == 0 || bytes + queue[count].size <= Self.maxBytes
            {
                bytes += queue[count].size
                count += 1
            }
            state.queued[principal] = count == queue.count ? [] : Array(queue[count...])
            return Array(queue[..<count])
        }
    }

    private static let shutDownError = LongLinkError(code: .shutdown, message: "the Redis push store was shut down")
}
