internal import LongLinkCore
internal import LongLinkServer
internal import LongLinkTransport

/// An operation waiting in a ``GroupCommitQueue`` for its outcome.
protocol GroupCommitItem: Sendable {
    associatedtype Output: Sendable
    /// Resumed once: by the batch's sender, by the caller's cancellation or by a shutdown.
    var outcome: OneShot<Result<Output, LongLinkError>> { get }
    /// What the item counts against ``GroupCommitQueue/Limits/bytes``.
    var size: Int { get }
}

/// The one lane of a queue whose operations all leave together (``DedupeQueue``).
struct SingleLane: Hashable, Sendable {}

/// Group commit to Redis: at most one round trip in flight per lane; operations that arrive
/// meanwhile wait and leave together in the next.
///
/// Redis spends most of a call on calling a command or script, not on the work inside it, so one
/// call for many operations multiplies the rate. There is no timer and no waiting for a batch to
/// fill: an operation that finds nothing in flight in its lane leaves at once, and a batch is
/// whatever queued during the previous round trip (within ``Limits``). Operations of one lane leave
/// in call order, one batch after another (a principal's pushes take their seqs so).
///
/// An operation that finds its lane idle is sent by its own caller, alone (one in flight pays no
/// hop to a sending task); the batches queued behind it leave from an unstructured sending task,
/// so that no caller's cancellation cancels a call that carries other callers' operations. A
/// cancelled caller only stops waiting for its outcome (the operation may still take effect, as
/// with any lost reply).
final class GroupCommitQueue<Lane: Hashable & Sendable, Item: GroupCommitItem>: Sendable {
    /// Sends one batch of a lane and resumes each item's outcome; tells `sending` how many calls
    /// it takes before any outcome is resumed (so that a caller who got its reply finds them
    /// counted).
    typealias Send =
        @Sendable (_ lane: Lane, _ batch: [Item], _ sending: @escaping @Sendable (Int) -> Void) async
        -> Void

    /// How large one batch may be.
    struct Limits: Sendable {
        /// The most items in a batch.
        var items: Int
        /// About the most bytes (``GroupCommitItem/size``) in a batch: a batch takes at least one
        /// item, however large.
        var bytes: Int = .max
    }

    /// What ``shutdown()`` does with the operations queued behind a round trip.
    enum ShutdownRule: Sendable {
        /// Sends them and waits until every lane is done: what callers were told is stored, not
        /// dropped (each batch is bounded by the client's command timeout).
        case sendQueued
        /// Fails them with `shutdown` and returns at once; those in flight end with their call.
        case failQueued
    }

    private struct State {
        /// The lanes with a round trip in flight, and the operations queued behind it.
        var queued: [Lane: [Item]] = [:]
        var isShutDown = false
        /// Shutdown waiting for every lane to end its turn.
        var drained: [OneShot<Void>] = []
        /// Batches (round trips) and calls in them so far (tests: concurrent operations cost one
        /// round trip per turn).
        var batches = 0
        var calls = 0
    }

    private let state = Locked(State())
    private let limits: Limits
    private let shutdownRule: ShutdownRule
    private let shutDownError: LongLinkError
    private let cancelledError: LongLinkError
    private let send: Send

    /// A queue whose batches `send` sends. `shutDown` and `cancelled` are the messages of the
    /// errors an operation gets after ``shutdown()`` and when its caller is cancelled.
    init(
        limits: Limits, shutdownRule: ShutdownRule, shutDown: String, cancelled: String, send: @escaping Send
    ) {
        self.limits = limits
        self.shutdownRule = shutdownRule
        self.shutDownError = LongLinkError(code: .shutdown, message: shutDown)
        self.cancelledError = LongLinkError(code: .cancelled, message: cancelled)
        self.send = send
    }

    /// Queues `item` in `lane` and waits for its outcome (or for the caller's cancellation).
    func submit(_ item: Item, lane: Lane) async throws(LongLinkError) -> Item.Output {
        let startsSending = state.withLock { state -> Bool? in
            guard !state.isShutDown else { return nil }
            if state.queued[lane] != nil {
                state.queued[lane]!.append(item)
                return false
            }
            state.queued[lane] = [item]
            return true
        }
        guard let startsSending else { throw shutDownError }
        if startsSending {
            await sendOwn(lane)
        }
        let outcome = await withTaskCancellationHandler {
            await item.outcome.value()
        } onCancel: { [cancelledError] in
            item.outcome.resume(.failure(cancelledError))
        }
        return try outcome.get()
    }

    /// Refuses later operations with `shutdown`; what becomes of those queued is the queue's
    /// ``ShutdownRule``.
    func shutdown() async {
        let (failed, drained) = state.withLock { state -> ([Item], OneShot<Void>?) in
            state.isShutDown = true
            switch shutdownRule {
            case .failQueued:
                let failed = Array(state.queued.values.joined())
                // Emptied, not removed: each lane's task still ends its turn after its call.
                state.queued = state.queued.mapValues { _ in [] }
                return (failed, nil)
            case .sendQueued:
                guard !state.queued.isEmpty else { return ([], nil) }
                let drained = OneShot<Void>()
                state.drained.append(drained)
                return ([], drained)
            }
        }
        for item in failed { item.outcome.resume(.failure(shutDownError)) }
        await drained?.value()
    }

    /// The operations queued behind the lane's round trip in flight; nil when none is in flight
    /// (tests).
    func queuedCount(_ lane: Lane) -> Int? {
        state.withLock { $0.queued[lane]?.count }
    }

    /// Whether ``shutdown()`` was called (tests).
    var isShutDown: Bool { state.withLock { $0.isShutDown } }

    /// The batches (round trips) sent so far, and the calls they carried.
    var sent: (batches: Int, calls: Int) { state.withLock { ($0.batches, $0.calls) } }

    /// Sends the operation that found its lane idle, alone, from its caller's task: a lone
    /// operation (one in flight) leaves without waiting for a sending task to be scheduled, and
    /// its caller's cancellation reaches no one else's. What queued meanwhile leaves from a
    /// sending task.
    private func sendOwn(_ lane: Lane) async {
        let own = state.withLock { state -> [Item] in
            // The lane's first item is the caller's: it opened the lane.
            guard let first = state.queued[lane]?.first else { return [] }
            state.queued[lane]!.removeFirst()
            state.batches += 1
            return [first]
        }
        if !own.isEmpty { await sendBatch(own, of: lane) }
        guard let batch = takeBatch(lane) else { return }
        Task {
            await sendBatch(batch, of: lane)
            await sendAll(lane)
        }
    }

    /// Sends the lane's batches until none is queued.
    private func sendAll(_ lane: Lane) async {
        while let batch = takeBatch(lane) { await sendBatch(batch, of: lane) }
    }

    /// One round trip, counting the calls it takes.
    private func sendBatch(_ batch: [Item], of lane: Lane) async {
        await send(lane, batch) { [state] calls in state.withLock { $0.calls += calls } }
    }

    /// Takes the lane's next batch off its queue, or ends its turn when the queue is empty (and,
    /// when it was the last lane, wakes the shutdown waiting for that, outside the lock).
    private func takeBatch(_ lane: Lane) -> [Item]? {
        let (batch, drained) = state.withLock { state -> ([Item]?, [OneShot<Void>]) in
            guard let queue = state.queued[lane], !queue.isEmpty else {
                state.queued[lane] = nil
                guard state.queued.isEmpty else { return (nil, []) }
                defer { state.drained = [] }
                return (nil, state.drained)
            }
            var count = 0
            var bytes = 0
            while count < queue.count, count < limits.items,
                count == 0 || queue[count].size <= limits.bytes - bytes
            {
                bytes += queue[count].size
                count += 1
            }
            state.batches += 1
            state.queued[lane] = count == queue.count ? [] : Array(queue[count...])
            return (Array(queue[..<count]), [])
        }
        for waiter in drained { waiter.resume(()) }
        return batch
    }
}

extension GroupCommitQueue where Lane == SingleLane {
    /// Queues `item` and waits for its outcome (or for the caller's cancellation).
    func submit(_ item: Item) async throws(LongLinkError) -> Item.Output {
        try await submit(item, lane: SingleLane())
    }

    /// The operations queued behind the round trip in flight (tests).
    var queuedCount: Int { queuedCount(SingleLane()) ?? 0 }
}
