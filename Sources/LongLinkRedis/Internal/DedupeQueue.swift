internal import LongLinkServer
internal import LongLinkTransport

/// Group commit of ``RedisDedupeStore``'s claims, or of its stored replies: at most one round trip
/// in flight per queue; operations that arrive meanwhile wait and leave together in the next.
///
/// A fleet request costs Redis mostly the call of a command or script, not the work inside it, and
/// costs its caller a round trip: one pipelined write per batch (one script call per hash tag, see
/// ``RedisDedupeStore/sendBatch(_:backend:running:budgets:sending:)``) serves every request of the turn. There is
/// no timer and no waiting for a batch to fill: an operation that finds nothing in flight leaves
/// at once, and a batch is whatever queued during the previous round trip (at most ``maxItems``).
///
/// The sending task is unstructured, so that no caller's cancellation cancels a call that carries
/// other callers' operations: a cancelled caller only stops waiting for its outcome (the operation
/// may still take effect, as with any lost reply).
final class DedupeQueue: Sendable {
    /// What one queued operation asks of its entry.
    enum Operation: Sendable {
        /// Claim the entry for `term` ms or read what it holds (`SET NX PX GET`); with `lineage`, under
        /// the check of ``DedupeScripts/claimAllChecked``.
        case claim(term: Int64, lineage: LineageCheck? = nil)
        /// Store `value` (the reply) for `window` ms if the entry is still this instance's claim.
        case finish(value: [UInt8], window: Int64)

        var isClaim: Bool {
            if case .claim = self { return true }
            return false
        }

        /// The lineage check of a claim, if it asks one.
        var lineage: LineageCheck? {
            if case .claim(_, let lineage) = self { return lineage }
            return nil
        }
    }

    /// What a claim on a cluster with asynchronous replication sends besides its term (see
    /// ``DedupeScripts/claimAllChecked``).
    struct LineageCheck: Sendable {
        /// The lineage record of the entry's slot (``RedisKeys/dedupeLineage(principal:)``).
        let record: String
        /// The client marked the request a copy (`Request.resent`).
        let resent: Bool
        /// The server's de-dup window, in ms.
        let window: Int64
    }

    /// One operation waiting for its reply.
    struct Item: Sendable {
        let entry: DedupeEntryKey
        let operation: Operation
        let outcome = OneShot<Result<RESPValue, LongLinkError>>()
    }

    /// Sends one batch and resumes each item's outcome; tells `sending` how many calls it takes
    /// before any outcome is resumed (so that a caller who got its reply finds them counted).
    typealias Send = @Sendable (_ batch: [Item], _ sending: @escaping @Sendable (Int) -> Void) async -> Void

    static let maxItems = 256

    private struct State {
        /// The operations queued behind the round trip in flight; nil when none is in flight.
        var queued: [Item]?
        var isShutDown = false
        /// Shutdown waiting for the queue to drain.
        var drained: [OneShot<Void>] = []
        /// Batches (round trips) and calls in them so far (tests: concurrent requests cost one
        /// call per turn).
        var batches = 0
        var calls = 0
    }

    private let state = Locked(State())
    private let send: Send

    init(send: @escaping Send) {
        self.send = send
    }

    /// Queues the operation and waits for its reply (or for the caller's cancellation).
    func submit(_ entry: DedupeEntryKey, _ operation: Operation) async throws(LongLinkError) -> RESPValue {
        let item = Item(entry: entry, operation: operation)
        let startsSending = state.withLock { state -> Bool? in
            guard !state.isShutDown else { return nil }
            if state.queued != nil {
                state.queued!.append(item)
                return false
            }
            state.queued = [item]
            return true
        }
        guard let startsSending else { throw Self.shutDownError }
        if startsSending {
            Task { await self.sendAll() }
        }
        let outcome = await withTaskCancellationHandler {
            await item.outcome.value()
        } onCancel: {
            item.outcome.resume(.failure(LongLinkError(code: .cancelled, message: "the Redis command was cancelled")))
        }
        return try outcome.get()
    }

    /// Refuses later operations with `shutdown` and returns once those queued and in flight were
    /// sent (each batch is bounded by the client's command timeout): replies already answered to
    /// clients are stored, not dropped.
    func shutdown() async {
        let drained = state.withLock { state -> OneShot<Void>? in
            state.isShutDown = true
            guard state.queued != nil else { return nil }
            let drained = OneShot<Void>()
            state.drained.append(drained)
            return drained
        }
        await drained?.value()
    }

    /// The operations queued behind the round trip in flight (tests).
    var queuedCount: Int { state.withLock { $0.queued?.count ?? 0 } }

    /// The batches (round trips) sent so far, and the calls they carried.
    var sent: (batches: Int, calls: Int) { state.withLock { ($0.batches, $0.calls) } }

    /// Sends batches until none is queued.
    private func sendAll() async {
        while true {
            let (batch, drained) = nextBatch()
            guard let batch else {
                for waiter in drained { waiter.resume(()) }
                return
            }
            await send(batch) { [state] calls in state.withLock { $0.calls += calls } }
        }
    }

    /// Takes the next batch off the queue, or ends the turn when the queue is empty (and hands
    /// back the shutdown waiting for that, to be woken outside the lock).
    private func nextBatch() -> (batch: [Item]?, drained: [OneShot<Void>]) {
        state.withLock { state in
            guard let queue = state.queued, !queue.isEmpty else {
                state.queued = nil
                defer { state.drained = [] }
                return (nil, state.drained)
            }
            state.batches += 1
            let count = min(queue.count, Self.maxItems)
            state.queued = count == queue.count ? [] : Array(queue[count...])
            return (Array(queue[..<count]), [])
        }
    }

    private static let shutDownError = LongLinkError(code: .shutdown, message: "the Redis de-dup store was shut down")
}
