internal import LongLinkWire

/// Remembers requests by (principal, client_id, request_id) so that a request resent after a
/// reconnect runs once: a copy that arrives while the first runs waits for its result; a copy that
/// arrives after it finished gets the stored reply.
///
/// A pure state machine: it returns what to do and never performs I/O. Bounded by time (the
/// window) and by budgets (``DedupeLimits``): entries, running and finished, and the bytes of the
/// stored replies, per client (``DedupeKey/Client``), per principal and in all. At a bound a client
/// gives up its own oldest finished entries, never anyone else's: a new request that cannot make
/// room so is refused before it runs (``ArrivalAction/refuse(_:)``), and a reply that cannot is
/// kept as a marker (``StoredReply/notKept``) that answers its copies `RESOURCE_EXHAUSTED` rather
/// than running them again.
///
/// Entries live in slots (a slot freed by eviction is reused by the next arrival), indexed by key
/// in a ``DedupeIndex``. A run is addressed by its slot, so finishing it needs no lookup. A slot
/// also holds the number of its client's share: the client is looked up once, when its key
/// arrives, and finishing, evicting and removing reach the share (and its principal's) by number.
struct DedupeWindow<Waiter: Sendable>: Sendable {
    typealias Key = DedupeKey

    /// One execution of a request: where its entry lives and which run of that entry it is (a
    /// slot is reused, and a key may run again after an abandoned or expired run).
    struct Run: Sendable, Hashable {
        fileprivate let slot: Int
        /// Unique within the window.
        let generation: UInt64
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
        /// The bytes its stored reply holds (finished only), read when it goes without touching
        /// the reply.
        var bytes = 0
    }

    /// What an entry holds by reference: its key, the copies waiting while it runs, its reply once
    /// finished. Nil (the key) and empty while the slot is free.
    private struct SlotContents {
        var key: Key?
        /// The method the request called: a copy calling another one under the same id is refused.
        var method = ""
        var waiters = Waiters()
        var reply: StoredReply?
        /// The principal the execution bound its connection to, repeated for its copies.
        var binding: StoredReply.Binding?
    }

    /// A client's entries: how many, running or finished, the bytes of its stored replies, and its
    /// finished entries in completion order (records of entries gone since are skipped). It lives
    /// while any slot belongs to the client.
    private struct Share {
        var client: Key.Client?
        /// Its principal's number in ``DedupeWindow/principals``.
        var principal = 0
        var order: [Run] = []
        var head = 0
        var finished = 0
        /// Slots, running or finished.
        var members = 0
        var bytes = 0
    }

    /// A principal's entries, over all its clients. It lives while any client share belongs to it.
    private struct PrincipalShare {
        var members = 0
        var bytes = 0
        var clients = 0
    }

    let window: Duration
    let limits: DedupeLimits
    /// Shares by number; a number freed when its last slot goes is reused.
    private var shares: [Share] = []
    private var freeShares: [Int] = []
    /// Each client's share number: read when a key is allocated a slot, nowhere else.
    private var shareNumbers: [Key.Client: Int] = [:]
    private var principals: [PrincipalShare] = []
    private var freePrincipals: [Int] = []
    /// Each principal's number (nil: connections no login bound), read when a client's share is made.
    private var principalNumbers: [PrincipalKey?: Int] = [:]
    /// Slot `i` is `states[i]` and `contents[i]`.
    private var states: [SlotState] = []
    private var contents: [SlotContents] = []
    private var freeSlots: [Int] = []
    private var index = DedupeIndex()
    /// Finished runs in completion order, for expiry; `head` skips consumed ones.
    private var finishedOrder: [(run: Run, expiresAt: Int64)] = []
    private var head = 0
    private var nextGeneration: UInt64 = 1
    private var nextExpiry = Int64.min
    /// Times inside the window are nanoseconds since `origin`: plain integers, which also make
    /// saturating arithmetic at the window's edges simple.
    let origin: ContinuousClock.Instant
    private let windowNanoseconds: Int64

    /// Entries held, running and finished.
    private(set) var count = 0
    /// Bytes of the stored replies held (see ``StoredReply/byteCount``).
    private(set) var storedBytes = 0
    /// New requests refused at a budget so far.
    private(set) var refusals = 0
    /// Replies kept as a ``StoredReply/notKept`` marker so far.
    private(set) var repliesNotKept = 0

    /// The records the window keeps to find what to expire or give up (each a few words): bounded
    /// by its entries, whatever the request rate (for tests).
    var bookkeepingRecords: Int {
        finishedOrder.count - head + shares.reduce(0) { $0 + $1.order.count - $1.head }
    }

    init(window: Duration, limits: DedupeLimits, origin: ContinuousClock.Instant = .now) {
        self.window = window
        self.limits = limits
        self.origin = origin
        windowNanoseconds = Self.nanoseconds(window)
    }

    /// `instant` on the window's time line (nanoseconds since `origin`), for the `at:` forms, so
    /// that a server reads and converts its clock outside the window's lock.
    static func time(_ instant: ContinuousClock.Instant, since origin: ContinuousClock.Instant) -> Int64 {
        nanoseconds(origin.duration(to: instant))
    }

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
        guard let slot = find(key).slot else {
            guard let share = admit(key.client) else {
                refusals += 1
                return .refuse(refusal(of: key.client, at: now))
            }
            let slot = allocate(key, share: share)
            contents[slot].method = method
            // Found again: making room may have moved the index's buckets.
            index.insert(slot: slot, hash: key.hash, at: find(key).bucket, count: count)
            return .execute(start(slot, waiter: waiter))
        }
        guard contents[slot].method == method else { return .conflict(method: contents[slot].method) }
        guard states[slot].phase == .finished else {
            contents[slot].waiters.append(waiter)
            return .wait
        }
        if states[slot].expiresAt <= now {
            // Expired but not yet dropped: the same entry runs again (a new generation, so the
            // old run's place in the completion orders no longer removes it).
            dropReply(slot)
            return .execute(start(slot, waiter: waiter))
        }
        return .replay(contents[slot].reply!.response, binding: contents[slot].binding)
    }

    private mutating func start(_ slot: Int, waiter: Waiter) -> Run {
        let generation = nextGeneration
        nextGeneration += 1
        states[slot].generation = generation
        states[slot].phase = .running
        contents[slot].waiters = Waiters(waiter)
        contents[slot].binding = nil
        return Run(slot: slot, generation: generation)
    }

    /// Whether `run` is the slot's current execution and still running.
    func isRunning(_ run: Run) -> Bool {
        run.slot < states.count && states[run.slot].generation == run.generation && states[run.slot].phase == .running
    }

    /// The running execution `run` bound its connection: its copies will bind theirs alike.
    mutating func bound(_ run: Run, to binding: StoredReply.Binding) {
        guard isRunning(run) else { return }
        contents[run.slot].binding = binding
    }

    /// What the running execution `run` bound its connection to, if it did.
    func binding(of run: Run) -> StoredReply.Binding? {
        isRunning(run) ? contents[run.slot].binding : nil
    }

    /// The handler finished: store the reply and hand back every waiter to answer.
    mutating func finish(_ run: Run, response: Frame.Response, now: ContinuousClock.Instant) -> Waiters {
        finish(run, response: response, at: Self.time(now, since: origin))
    }

    /// ``finish(_:response:now:)`` at `now` on the window's time line (see ``time(_:since:)``).
    ///
    /// The reply is kept when the client's budgets hold it, giving up the client's own oldest
    /// finished entries if need be; otherwise the entry keeps the ``StoredReply/notKept`` marker.
    mutating func finish(_ run: Run, response: Frame.Response, at now: Int64) -> Waiters {
        guard isRunning(run) else { return Waiters() }
        let slot = run.slot
        // Saturating: a window of centuries never expires rather than wrapping into the past.
        let expiresAt = now > Int64.max - windowNanoseconds ? Int64.max : now + windowNanoseconds
        var waiters = Waiters()
        swap(&waiters, &contents[slot].waiters)
        let share = states[slot].share
        let reply: StoredReply
        if makeRoom(for: StoredReply.byteCount(of: response), in: share) {
            reply = StoredReply(response)
        } else {
            reply = .notKept
            repliesNotKept += 1
        }
        contents[slot].reply = reply
        hold(reply.byteCount, in: share)
        states[slot].bytes = reply.byteCount
        states[slot].phase = .finished
        states[slot].expiresAt = expiresAt
        finishedOrder.append((run, expiresAt))
        trimOrder(of: share)
        shares[share].order.append(run)
        shares[share].finished += 1
        return waiters
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
            let run = finishedOrder[head].run
            head += 1
            // The key may have been re-run (and finished again later), or its slot reused: remove
            // only the run this record is about.
            if isFinished(run) { remove(slot: run.slot) }
        }
        if head > 1024, head * 2 > finishedOrder.count {
            finishedOrder.removeFirst(head)
            head = 0
        } else if finishedOrder.count - head > 2 * count + 1024 {
            // Records of entries gone before they expired (given up at a bound, run again): a
            // client that gives up its own entries at full rate would otherwise leave one per
            // request here for a whole window.
            finishedOrder = finishedOrder[head...].filter { isFinished($0.run) }
            head = 0
        }
    }

    private func isFinished(_ run: Run) -> Bool {
        states[run.slot].generation == run.generation && states[run.slot].phase == .finished
    }

    // MARK: Time

    /// Whole nanoseconds, clamped to a quarter of the `Int64` range either way (about 73 years),
    /// so that sums of two never overflow.
    private static func nanoseconds(_ duration: Duration) -> Int64 {
        duration.nanoseconds(clampedTo: Int64.max / 4)
    }

    // MARK: Budgets

    /// Counts one more entry of `client` within every entry budget, giving up as many of the
    /// client's own oldest finished entries as that takes; nil (nothing counted or given up) when
    /// even all of them would not make room.
    private mutating func admit(_ client: Key.Client) -> Int? {
        let known = shareNumbers[client]
        var (finished, members, principalMembers) = (0, 0, 0)
        if let known {
            (finished, members) = (shares[known].finished, shares[known].members)
            principalMembers = principals[shares[known].principal].members
        } else if let principal = principalNumbers[client.principal.map(PrincipalKey.init)] {
            principalMembers = principals[principal].members
        }
        // How many entries must go for one more to fit (0 or less: it fits).
        let over =
            max(
                count - limits.entries, members - limits.entriesPerClient,
                principalMembers - limits.entriesPerPrincipal) + 1
        guard over <= finished else { return nil }
        let share = known ?? newShare(client)
        // Counted before its own entries go, so that the share outlives them.
        join(share)
        var evicting = over
        while evicting > 0 {
            evictOldest(of: share)
            evicting -= 1
        }
        return share
    }

    /// Whether the client owning `share` may store a reply of `bytes` within every byte budget,
    /// and makes room by giving up its own oldest finished entries if need be. False, giving
    /// up nothing, when even all of them would not make room.
    private mutating func makeRoom(for bytes: Int, in share: Int) -> Bool {
        let principal = shares[share].principal
        let own = shares[share].bytes
        guard bytes <= limits.bytesPerClient, principals[principal].bytes - own + bytes <= limits.bytesPerPrincipal,
            storedBytes - own + bytes <= limits.bytes
        else { return false }
        while shares[share].bytes + bytes > limits.bytesPerClient
            || principals[principal].bytes + bytes > limits.bytesPerPrincipal || storedBytes + bytes > limits.bytes
        {
            // The share's running entry (the one finishing) keeps it alive meanwhile.
            guard evictOldest(of: share) else { break }
        }
        return true
    }

    private mutating func hold(_ bytes: Int, in share: Int) {
        shares[share].bytes += bytes
        principals[shares[share].principal].bytes += bytes
        storedBytes += bytes
    }

    /// Removes the oldest finished entry of `share`; false when it has none.
    @discardableResult
    private mutating func evictOldest(of share: Int) -> Bool {
        trimOrder(of: share)
        guard shares[share].head < shares[share].order.count else { return false }
        remove(slot: shares[share].order[shares[share].head].slot)
        return true
    }

    /// Skips the records at the head of `share`'s completion order whose entry is gone (expired,
    /// evicted, or running again), and drops them once they are half the array: done at every
    /// finish, so that a client that never reaches a bound does not grow its order with every
    /// request.
    private mutating func trimOrder(of share: Int) {
        var head = shares[share].head
        // Almost always the oldest record is live: nothing to write.
        guard head < shares[share].order.count, !isFinished(shares[share].order[head]) else { return }
        while head < shares[share].order.count, !isFinished(shares[share].order[head]) { head += 1 }
        shares[share].head = head
        if head > 32, head * 2 > shares[share].order.count {
            shares[share].order.removeFirst(head)
            shares[share].head = 0
        }
    }

    /// What a refused request is told: which budget is full, and when room may have come.
    private func refusal(of client: Key.Client, at now: Int64) -> Frame.Status {
        let share = shareNumbers[client]
        let principalMembers =
            share.map { principals[shares[$0].principal].members }
            ?? principalNumbers[client.principal.map(PrincipalKey.init)].map { principals[$0].members } ?? 0
        let which =
            if let share, shares[share].members >= limits.entriesPerClient {
                "this client's \(limits.entriesPerClient) entries are held"
            } else if principalMembers >= limits.entriesPerPrincipal {
                "this principal's \(limits.entriesPerPrincipal) entries are held"
            } else {
                "the server's \(limits.entries) entries are held"
            }
        // Room comes when one of the client's running requests finishes (then it may give it up),
        // or at the earliest when the oldest finished entry expires.
        let wait: Int64 =
            if let share, shares[share].members > shares[share].finished {
                100_000_000
            } else if head < finishedOrder.count {
                max(1_000_000, finishedOrder[head].expiresAt - now)
            } else {
                windowNanoseconds
            }
        return Frame.Status(
            code: .resourceExhausted,
            message: "de-duplication budget full: \(which); retry in \((wait + 999_999) / 1_000_000) ms")
    }

    // MARK: Shares

    /// A new share for `client`, under its principal's (made when it has none).
    private mutating func newShare(_ client: Key.Client) -> Int {
        let principalKey = client.principal.map(PrincipalKey.init)
        let principal: Int
        if let known = principalNumbers[principalKey] {
            principal = known
        } else if let free = freePrincipals.popLast() {
            principal = free
            principalNumbers[principalKey] = free
        } else {
            principal = principals.count
            principals.append(PrincipalShare())
            principalNumbers[principalKey] = principal
        }
        principals[principal].clients += 1
        let share = Share(client: client, principal: principal)
        let number: Int
        if let free = freeShares.popLast() {
            number = free
            shares[number] = share
        } else {
            number = shares.count
            shares.append(share)
        }
        shareNumbers[client] = number
        return number
    }

    /// One more entry of `share`, counted against its client, its principal and the window.
    private mutating func join(_ share: Int) {
        shares[share].members += 1
        principals[shares[share].principal].members += 1
        count += 1
    }

    /// An entry of `share` is gone: a share left with none is forgotten, and its principal's with
    /// it when it was the principal's last.
    private mutating func leave(_ share: Int) {
        count -= 1
        let principal = shares[share].principal
        principals[principal].members -= 1
        shares[share].members -= 1
        guard shares[share].members == 0 else { return }
        if let client = shares[share].client {
            shareNumbers[client] = nil
            principals[principal].clients -= 1
            if principals[principal].clients == 0 {
                principalNumbers[client.principal.map(PrincipalKey.init)] = nil
                principals[principal] = PrincipalShare()
                freePrincipals.append(principal)
            }
        }
        shares[share] = Share()
        freeShares.append(share)
    }

    // MARK: Slots

    private func find(_ key: Key) -> (bucket: Int, slot: Int?) {
        index.find(hash: key.hash) { contents[$0].key == key }
    }

    private mutating func allocate(_ key: Key, share: Int) -> Int {
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

    /// A finished entry lets go of its reply (removed, or running again).
    private mutating func dropReply(_ slot: Int) {
        guard states[slot].phase == .finished else { return }
        let share = states[slot].share
        shares[share].finished -= 1
        if states[slot].bytes != 0 { hold(-states[slot].bytes, in: share) }
        contents[slot].reply = nil
    }

    private mutating func remove(slot: Int) {
        guard states[slot].phase != .free else { return }
        let share = states[slot].share
        dropReply(slot)
        index.remove(slot: slot, hash: states[slot].hash)
        states[slot].phase = .free
        contents[slot] = SlotContents()
        freeSlots.append(slot)
        leave(share)
    }
}
