import LongLinkWire

/// Remembers requests by (client_id, request_id) so that a request resent after a reconnect runs
/// once: a copy that arrives while the first runs waits for its result; a copy that arrives after
/// it finished gets the stored reply.
///
/// A pure state machine: it returns what to do and never performs I/O. Bounded by time (the window)
/// and by count (the oldest finished entries are evicted first). Running entries are bounded by the
/// per-connection in-flight limit times the connection limit, so they are never evicted.
struct DedupeWindow<Waiter: Sendable>: Sendable {
    typealias Key = DedupeKey

    private enum Entry {
        case running(waiters: [Waiter], generation: UInt64)
        case finished(Frame.Response, expiresAt: ContinuousClock.Instant)
    }

    /// What to do with an arriving request.
    enum ArrivalAction {
        /// Not seen (or expired): run the handler; the caller is the first waiter. The generation
        /// identifies this run in ``finish(_:generation:response:now:)`` and ``abandon(_:generation:)``.
        case execute(generation: UInt64)
        /// The same request is running: the caller was added as a waiter; do not run it again.
        case wait
        /// Finished within the window: send this stored reply, do not run the handler.
        case replay(Frame.Response)
    }

    let window: Duration
    let capacity: Int
    private var entries: [Key: Entry] = [:]
    /// Finished keys in completion order, for expiry and eviction; `head` skips consumed slots.
    private var finishedOrder: [(key: Key, expiresAt: ContinuousClock.Instant)] = []
    private var head = 0
    private var nextGeneration: UInt64 = 1
    private var nextExpiry: ContinuousClock.Instant?

    init(window: Duration, capacity: Int) {
        self.window = window
        self.capacity = max(1, capacity)
    }

    var count: Int { entries.count }

    mutating func arrive(_ key: Key, waiter: Waiter, now: ContinuousClock.Instant) -> ArrivalAction {
        // Expiry walks from the oldest entry; doing it at most once a millisecond keeps it off the
        // per-request path at high rates (an entry may outlive its window by up to that much).
        if nextExpiry.map({ now >= $0 }) ?? true {
            expire(now: now)
            nextExpiry = now.advanced(by: .milliseconds(1))
        }
        // One table lookup per call: the entry is changed in place through the dictionary's
        // accessor (a missing key is inserted, a nil written back removes it). The closure must not
        // touch `self`, so a run's generation is taken before and consumed after.
        let generation = nextGeneration
        let action = modifyEntry(key) { entry -> ArrivalAction in
            switch entry {
            case .none:
                entry = .running(waiters: [waiter], generation: generation)
                return .execute(generation: generation)
            case .running(var waiters, let running)?:
                entry = nil  // Releases the stored array, so that appending does not copy it.
                waiters.append(waiter)
                entry = .running(waiters: waiters, generation: running)
                return .wait
            case .finished(let response, let expiresAt)?:
                guard expiresAt <= now else { return .replay(response) }
                entry = .running(waiters: [waiter], generation: generation)
                return .execute(generation: generation)
            }
        }
        if case .execute = action { nextGeneration += 1 }
        return action
    }

    private mutating func modifyEntry<Result>(_ key: Key, _ body: (inout Entry?) -> Result) -> Result {
        body(&entries[key])
    }

    /// The handler finished: store the reply and hand back every waiter to answer.
    mutating func finish(
        _ key: Key, generation: UInt64, response: Frame.Response, now: ContinuousClock.Instant
    ) -> [Waiter] {
        let expiresAt = now.advanced(by: window)
        let waiters = modifyEntry(key) { entry -> [Waiter]? in
            guard case .running(let waiters, generation)? = entry else { return nil }
            entry = .finished(response, expiresAt: expiresAt)
            return waiters
        }
        guard let waiters else { return [] }
        finishedOrder.append((key, expiresAt))
        evictOverCapacity()
        return waiters
    }

    /// The handler was cancelled or timed out: forget the key (a later copy runs again) and hand
    /// back the waiters.
    mutating func abandon(_ key: Key, generation: UInt64) -> [Waiter] {
        modifyEntry(key) { entry in
            guard case .running(let waiters, generation)? = entry else { return [] }
            entry = nil
            return waiters
        }
    }

    /// Removes one waiter (its caller cancelled). Returns true when no waiter is left, so the
    /// handler may be cancelled.
    mutating func removeWaiter(_ key: Key, where matches: (Waiter) -> Bool) -> Bool {
        modifyEntry(key) { entry in
            guard case .running(var waiters, let generation)? = entry else { return false }
            entry = nil
            waiters.removeAll(where: matches)
            entry = .running(waiters: waiters, generation: generation)
            return waiters.isEmpty
        }
    }

    mutating func expire(now: ContinuousClock.Instant) {
        while head < finishedOrder.count, finishedOrder[head].expiresAt <= now {
            dropOldest()
        }
        compact()
    }

    private mutating func evictOverCapacity() {
        while entries.count > capacity, head < finishedOrder.count {
            dropOldest()
        }
        compact()
    }

    private mutating func dropOldest() {
        let (key, expiresAt) = finishedOrder[head]
        head += 1
        // The key may have been re-run and finished again later; remove only this generation.
        modifyEntry(key) { entry in
            if case .finished(_, let current)? = entry, current == expiresAt { entry = nil }
        }
    }

    private mutating func compact() {
        if head > 1024, head * 2 > finishedOrder.count {
            finishedOrder.removeFirst(head)
            head = 0
        }
    }
}
