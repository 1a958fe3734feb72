internal import LongLinkWire

/// Remembers requests by (principal, client_id, request_id) so that a request resent after a reconnect runs
/// once: a copy that arrives while the first runs waits for its result; a copy that arrives after
/// it finished gets the stored reply.
///
/// A pure state machine: it returns what to do and never performs I/O. Bounded by time (the window)
/// and by count: each client (``DedupeKey/Client``) has a share of ``capacityPerClient`` finished
/// entries, past which its own oldest is evicted, and when the whole window holds ``capacity``
/// entries a client's new reply also evicts its own oldest (or is not kept when it has no other),
/// so that no client ever evicts another's entries. Running entries are bounded by the
/// per-connection in-flight limit times the connection limit, so they are never evicted.
///
/// Entries live in slots (a slot freed by eviction is reused by the next arrival), and the key
/// index is an open-addressing table of 8-byte buckets holding a slot number and 32 bits of the
/// key's hash, so that a probe reads no key and growing or removing never hashes a key again. A
/// run is addressed by its slot, so finishing it needs no lookup. A slot also holds the number of
/// its client's share: the client is looked up once, when its key arrives, and finishing,
/// evicting and removing reach the share by that number.
struct DedupeWindow<Waiter: Sendable>: Sendable {
    typealias Key = DedupeKey

    /// One execution of a request: where its entry lives and which run of that entry it is (a
    /// slot is reused, and a key may run again after an abandoned or expired run).
    struct Run: Sendable, Hashable {
        fileprivate let slot: Int
        /// Unique within the window.
        let generation: UInt64
    }

    /// The copies waiting for one execution. Almost always exactly one (the request that started
    /// it), which is kept inline rather than in an array of its own.
    struct Waiters: Sequence {
        private var first: Waiter?
        private var others: [Waiter] = []

        init() {}

        init(_ waiter: Waiter) { first = waiter }

        var isEmpty: Bool { first == nil }

        mutating func append(_ waiter: Waiter) {
            if first == nil { first = waiter } else { others.append(waiter) }
        }

        mutating func removeAll(where matches: (Waiter) -> Bool) {
            var kept = Waiters()
            for waiter in self where !matches(waiter) { kept.append(waiter) }
            self = kept
        }

        func makeIterator() -> Iterator { Iterator(first: first, others: others.makeIterator()) }

        struct Iterator: IteratorProtocol {
            fileprivate var first: Waiter?
            fileprivate var others: IndexingIterator<[Waiter]>

            mutating func next() -> Waiter? {
                if let waiter = first {
                    first = nil
                    return waiter
                }
                return others.next()
            }
        }
    }

    /// What an entry's phase checks, expiry and eviction read: plain values, in an array of their
    /// own, so that reading them copies no key or reply (each a reference-count round trip).
    private struct SlotState {
        enum Phase { case free, running, finished }
        var phase = Phase.free
        /// The key's hash (valid unless free).
        var hash = 0
        var generation: UInt64 = 0
        /// When a finished entry expires (see ``DedupeWindow/time(_:since:)``); unused while running.
        var expiresAt: Int64 = 0
        /// The entry's client's share in ``DedupeWindow/shares`` (valid unless free).
        var share = 0
    }

    /// What an entry holds by reference: its key, the copies waiting while it runs, its reply once
    /// finished. Nil (the key) and empty while the slot is free.
    private struct SlotContents {
        var key: Key?
        /// The method the request called: a copy calling another one under the same id is refused.
        var method = ""
        var waiters = Waiters()
        var reply: StoredReply?
    }

    /// What to do with an arriving request.
    enum ArrivalAction {
        /// Not seen (or expired): run the handler; the caller is the first waiter. The run
        /// identifies this execution in ``finish(_:response:now:)`` and ``abandon(_:)``.
        case execute(Run)
        /// The same request is running: the caller was added as a waiter; do not run it again.
        case wait
        /// Finished within the window: send this stored reply, do not run the handler.
        case replay(Frame.Response)
        /// The id is held by a request for another method (`method`): refuse the copy, run nothing.
        case conflict(method: String)
    }

    /// A client's finished entries in completion order (records of entries gone since are skipped).
    /// It lives while any slot, running or finished, belongs to the client.
    private struct Share {
        var client: Key.Client?
        var order: [Run] = []
        var head = 0
        /// Finished entries.
        var count = 0
        /// Slots, running or finished, that belong to the share.
        var members = 0
    }

    let window: Duration
    let capacity: Int
    let capacityPerClient: Int
    /// Shares by number; a number freed when its last slot goes is reused.
    private var shares: [Share] = []
    private var freeShares: [Int] = []
    /// Each client's share number: read when a key is allocated a slot, nowhere else.
    private var shareNumbers: [Key.Client: Int] = [:]
    /// Slot `i` is `states[i]` and `contents[i]`.
    private var states: [SlotState] = []
    private var contents: [SlotContents] = []
    private var freeSlots: [Int] = []
    /// Open addressing with linear probing; 0 is empty, otherwise the low 32 bits of the key's hash
    /// (which also give the home bucket) above `slot + 1`. At most half full.
    private var buckets = [UInt64](repeating: 0, count: 16)
    /// Finished runs in completion order, for expiry and eviction; `head` skips consumed ones.
    private var finishedOrder: [(run: Run, expiresAt: Int64, hash: Int)] = []
    private var head = 0
    private var nextGeneration: UInt64 = 1
    private var nextExpiry = Int64.min
    /// Times inside the window are nanoseconds since `origin`: plain integers, which also make
    /// saturating arithmetic at the window's edges simple.
    let origin: ContinuousClock.Instant
    private let windowNanoseconds: Int64

    init(window: Duration, capacity: Int, capacityPerClient: Int = .max, origin: ContinuousClock.Instant = .now) {
        self.window = window
        self.capacity = max(1, capacity)
        self.capacityPerClient = max(1, capacityPerClient)
        self.origin = origin
        windowNanoseconds = Self.nanoseconds(window)
    }

    /// `instant` on the window's time line (nanoseconds since `origin`), for the `at:` forms, so
    /// that a server reads and converts its clock outside the window's lock.
    static func time(_ instant: ContinuousClock.Instant, since origin: ContinuousClock.Instant) -> Int64 {
        nanoseconds(origin.duration(to: instant))
    }

    /// Entries held, running and finished.
    var count: Int { states.count - freeSlots.count }

    mutating func arrive(_ key: Key, method: String = "", waiter: Waiter, now: ContinuousClock.Instant)
        -> ArrivalAction
    {
        arrive(key, method: method, waiter: waiter, at: Self.time(now, since: origin))
    }

    /// ``arrive(_:method:waiter:now:)`` at `now` on the window's time line (see ``time(_:since:)``).
    mutating func arrive(_ key: Key, method: String = "", waiter: Waiter, at now: Int64) -> ArrivalAction {
        // Expiry walks from the oldest entry, at most once a millisecond so that it is not paid per
        // request (an entry may outlive its window by up to that much).
        if now >= nextExpiry {
            expire(at: now)
            nextExpiry = now &+ 1_000_000
        }
        let (bucket, found) = find(key)
        guard let slot = found else {
            let slot = allocate(key)
            contents[slot].method = method
            insert(slot: slot, hash: key.hash, at: bucket)
            return .execute(start(slot, waiter: waiter))
        }
        guard contents[slot].method == method else { return .conflict(method: contents[slot].method) }
        guard states[slot].phase == .finished else {
            contents[slot].waiters.append(waiter)
            return .wait
        }
        if states[slot].expiresAt <= now {
            // Expired but not yet dropped: the same entry runs again (a new generation, so the
            // old run's place in the completion order no longer removes it).
            uncount(slot)
            contents[slot].reply = nil
            return .execute(start(slot, waiter: waiter))
        }
        return .replay(contents[slot].reply!.response)
    }

    private mutating func start(_ slot: Int, waiter: Waiter) -> Run {
        let generation = nextGeneration
        nextGeneration += 1
        states[slot].generation = generation
        states[slot].phase = .running
        contents[slot].waiters = Waiters(waiter)
        return Run(slot: slot, generation: generation)
    }

    /// Whether `run` is the slot's current execution and still running.
    func isRunning(_ run: Run) -> Bool {
        run.slot < states.count && states[run.slot].generation == run.generation && states[run.slot].phase == .running
    }

    /// The handler finished: store the reply and hand back every waiter to answer.
    mutating func finish(_ run: Run, response: Frame.Response, now: ContinuousClock.Instant) -> Waiters {
        finish(run, response: response, at: Self.time(now, since: origin))
    }

    /// ``finish(_:response:now:)`` at `now` on the window's time line (see ``time(_:since:)``).
    mutating func finish(_ run: Run, response: Frame.Response, at now: Int64) -> Waiters {
        guard isRunning(run) else { return Waiters() }
        // Saturating: a window of centuries never expires rather than wrapping into the past.
        let expiresAt = now > Int64.max - windowNanoseconds ? Int64.max : now + windowNanoseconds
        var waiters = Waiters()
        swap(&waiters, &contents[run.slot].waiters)
        contents[run.slot].reply = StoredReply(response)
        states[run.slot].phase = .finished
        states[run.slot].expiresAt = expiresAt
        finishedOrder.append((run, expiresAt, states[run.slot].hash))
        let share = states[run.slot].share
        shares[share].order.append(run)
        shares[share].count += 1
        evict(share)
        return waiters
    }

    /// Evicts the oldest finished entries of the client owning `share` while it is over its share,
    /// or while the window is over capacity and the client has any: never another client's.
    private mutating func evict(_ share: Int) {
        // Removing the share's last entry frees the share, whose count is then 0.
        while shares[share].count > capacityPerClient || (count > capacity && shares[share].count > 0) {
            var head = shares[share].head
            var victim: Run?
            while head < shares[share].order.count, victim == nil {
                let run = shares[share].order[head]
                head += 1
                if states[run.slot].generation == run.generation, states[run.slot].phase == .finished { victim = run }
            }
            shares[share].head = head
            // Every counted entry has a record, so a victim is always found; stop rather than spin.
            guard let victim else { break }
            remove(slot: victim.slot)
        }
        if shares[share].head > 32, shares[share].head * 2 > shares[share].order.count {
            shares[share].order.removeFirst(shares[share].head)
            shares[share].head = 0
        }
    }

    /// A finished entry stops counting toward its client's share (removed, or running again).
    private mutating func uncount(_ slot: Int) {
        guard states[slot].phase == .finished else { return }
        shares[states[slot].share].count -= 1
    }

    /// The share number of `client`, made when it has none; counts one more member slot.
    private mutating func joinShare(_ client: Key.Client) -> Int {
        let number: Int
        if let known = shareNumbers[client] {
            number = known
        } else if let free = freeShares.popLast() {
            number = free
            shares[number].client = client
            shareNumbers[client] = number
        } else {
            number = shares.count
            shares.append(Share(client: client))
            shareNumbers[client] = number
        }
        shares[number].members += 1
        return number
    }

    /// A slot of `share` was freed: a share with no member slot left is forgotten.
    private mutating func release(share: Int) {
        shares[share].members -= 1
        guard shares[share].members == 0 else { return }
        if let client = shares[share].client { shareNumbers[client] = nil }
        shares[share] = Share()
        freeShares.append(share)
    }

    /// The handler was cancelled or timed out: forget the key (a later copy runs again) and hand
    /// back the waiters.
    mutating func abandon(_ run: Run) -> Waiters {
        guard isRunning(run) else { return Waiters() }
        let waiters = contents[run.slot].waiters
        remove(slot: run.slot)
        return waiters
    }

    /// Removes one waiter (its caller cancelled). Returns true when no waiter is left, so the
    /// handler may be cancelled.
    mutating func removeWaiter(_ key: Key, where matches: (Waiter) -> Bool) -> Bool {
        guard let slot = find(key).slot, states[slot].phase == .running else { return false }
        contents[slot].waiters.removeAll(where: matches)
        return contents[slot].waiters.isEmpty
    }

    private mutating func expire(at now: Int64) {
        while head < finishedOrder.count, finishedOrder[head].expiresAt <= now {
            dropOldest()
        }
        compact()
    }

    private mutating func dropOldest() {
        let run = finishedOrder[head].run
        head += 1
        // The key may have been re-run (and finished again later), or its slot reused: remove only
        // the run this record is about.
        if states[run.slot].generation == run.generation, states[run.slot].phase == .finished {
            remove(slot: run.slot)
        }
    }

    private mutating func compact() {
        if head > 1024, head * 2 > finishedOrder.count {
            finishedOrder.removeFirst(head)
            head = 0
        }
    }

    // MARK: Time

    /// Whole nanoseconds, clamped to a quarter of the `Int64` range either way (about 73 years),
    /// so that sums of two never overflow.
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.nanoseconds(clampedTo: Int64.max / 4)
    }

    // MARK: Slots

    private mutating func allocate(_ key: Key) -> Int {
        let share = joinShare(key.client)
        if let slot = freeSlots.popLast() {
            contents[slot].key = key
            states[slot].hash = key.hash
            states[slot].share = share
            return slot
        }
        states.append(SlotState(hash: key.hash, share: share))
        contents.append(SlotContents(key: key))
        return states.count - 1
    }

    private mutating func remove(slot: Int) {
        guard states[slot].phase != .free else { return }
        uncount(slot)
        release(share: states[slot].share)
        removeBucket(bucket(of: slot, hash: states[slot].hash))
        states[slot].phase = .free
        contents[slot].key = nil
        contents[slot].method = ""
        contents[slot].waiters = Waiters()
        contents[slot].reply = nil
        freeSlots.append(slot)
    }

    // MARK: Index

    private var mask: Int { buckets.count - 1 }

    private static func tag(_ hash: Int) -> UInt64 { UInt64(UInt32(truncatingIfNeeded: hash)) }

    /// The key's slot, if present, and the bucket where the search ended (its bucket, or the
    /// empty one where it belongs).
    private func find(_ key: Key) -> (bucket: Int, slot: Int?) {
        let tag = Self.tag(key.hash)
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while true {
            let value = buckets[bucket]
            if value == 0 { return (bucket, nil) }
            if value >> 32 == tag {
                let slot = Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
                if contents[slot].key == key { return (bucket, slot) }
            }
            bucket = (bucket + 1) & mask
        }
    }

    /// The bucket that points at `slot` (whose key hashes to `hash`).
    private func bucket(of slot: Int, hash: Int) -> Int {
        let tag = Self.tag(hash)
        let wanted = tag << 32 | UInt64(slot + 1)
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while buckets[bucket] != wanted {
            bucket = (bucket + 1) & mask
        }
        return bucket
    }

    private mutating func insert(slot: Int, hash: Int, at bucket: Int) {
        buckets[bucket] = Self.tag(hash) << 32 | UInt64(slot + 1)
        if count * 2 > buckets.count { grow() }
    }

    /// Backward-shift deletion: moves later members of the probe run into the hole, so lookups
    /// need no tombstones.
    private mutating func removeBucket(_ removed: Int) {
        var hole = removed
        var next = (removed + 1) & mask
        while buckets[next] != 0 {
            let home = Int(truncatingIfNeeded: buckets[next] >> 32) & mask
            // The member may move back when the hole lies between its home and where it sits.
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        buckets[hole] = 0
    }

    private mutating func grow() {
        let old = buckets
        buckets = [UInt64](repeating: 0, count: old.count * 2)
        for value in old where value != 0 {
            var bucket = Int(truncatingIfNeeded: value >> 32) & mask
            while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
            buckets[bucket] = value
        }
    }
}
