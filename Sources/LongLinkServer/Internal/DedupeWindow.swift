import LongLinkWire

/// Remembers requests by (client_id, request_id) so that a request resent after a reconnect runs
/// once: a copy that arrives while the first runs waits for its result; a copy that arrives after
/// it finished gets the stored reply.
///
/// A pure state machine: it returns what to do and never performs I/O. Bounded by time (the window)
/// and by count (the oldest finished entries are evicted first). Running entries are bounded by the
/// per-connection in-flight limit times the connection limit, so they are never evicted.
struct DedupeWindow<Waiter: Sendable>: Sendable {
    struct Key: Hashable {
        var clientID: String
        var requestID: String
    }

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
        switch entries[key] {
        case .none:
            return start(key, waiter: waiter)
        case .running(var waiters, let generation)?:
            waiters.append(waiter)
            entries[key] = .running(waiters: waiters, generation: generation)
            return .wait
        case .finished(let response, let expiresAt)?:
            if expiresAt <= now {
                return start(key, waiter: waiter)
            }
            return .replay(response)
        }
    }

    private mutating func start(_ key: Key, waiter: Waiter) -> ArrivalAction {
        let generation = nextGeneration
        nextGeneration += 1
        entries[key] = .running(waiters: [waiter], generation: generation)
        return .execute(generation: generation)
    }

    /// The handler finished: store the reply and hand back every waiter to answer.
    mutating func finish(
        _ key: Key, generation: UInt64, response: Frame.Response, now: ContinuousClock.Instant
    ) -> [Waiter] {
        guard case .running(let waiters, generation)? = entries[key] else { return [] }
        let expiresAt = now.advanced(by: window)
        entries[key] = .finished(response, expiresAt: expiresAt)
        finishedOrder.append((key, expiresAt))
        evictOverCapacity()
        return waiters
    }

    /// The handler was cancelled or timed out: forget the key (a later copy runs again) and hand
    /// back the waiters.
    mutating func abandon(_ key: Key, generation: UInt64) -> [Waiter] {
        guard case .running(let waiters, generation)? = entries[key] else { return [] }
        entries[key] = nil
        return waiters
    }

    /// Removes one waiter (its caller cancelled). Returns true when no waiter is left, so the
    /// handler may be cancelled.
    mutating func removeWaiter(_ key: Key, where matches: (Waiter) -> Bool) -> Bool {
        guard case .running(var waiters, let generation)? = entries[key] else { return false }
        waiters.removeAll(where: matches)
        entries[key] = .running(waiters: waiters, generation: generation)
        return waiters.isEmpty
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
        if case .finished(_, let current)? = entries[key], current == expiresAt {
            entries[key] = nil
        }
    }

    private mutating func compact() {
        if head > 1024, head * 2 > finishedOrder.count {
            finishedOrder.removeFirst(head)
            head = 0
        }
    }
}
