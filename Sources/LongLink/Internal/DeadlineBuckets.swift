import LongLinkWire

/// The pending calls grouped by the millisecond of their deadline, for the client's single
/// deadline timer.
///
/// Why not one heap of calls: a reply removes its call in O(log n) there, with a retain and a
/// release per swap, and 100,000 calls sharing one deadline take 100,000 sifts to expire. Here a
/// call joins the bucket of its millisecond in O(1) and leaves it in O(1) (swap with the bucket's
/// last call); a min-heap orders only the distinct milliseconds, and expiry hands over whole
/// buckets, touching each expired call once.
///
/// A bucket is due when its millisecond has ended, so a call fails less than a millisecond after
/// its deadline and never before it. (Firing at the exact deadline would split the bucket whose
/// millisecond is still running: one more pass over every call in it.)
///
/// A bucket that empties stays until its millisecond comes (its calls' storage is released at
/// once); there is at most one per millisecond of the longest timeout in use.
struct DeadlineBuckets {
    /// The instant the millisecond numbering starts from.
    let origin: ContinuousClock.Instant
    private var buckets: [Int64: DeadlineBucket] = [:]
    /// Every key of `buckets`, each once, smallest first.
    private var milliseconds = MillisecondHeap()
    private(set) var count = 0
    /// The bucket the last insert used, while it is in `buckets`: calls made together share a
    /// millisecond (hundreds per bucket at full rate), and this skips the hashed lookup for them.
    private var lastBucket: DeadlineBucket?

    init(origin: ContinuousClock.Instant = .now) {
        self.origin = origin
    }

    var isEmpty: Bool { count == 0 }

    /// Adds the call; returns when its bucket becomes due (the end of its deadline's millisecond).
    @discardableResult
    mutating func insert(_ call: PendingCall) -> ContinuousClock.Instant {
        call.deadlineNanoseconds = nanoseconds(at: call.deadline)
        return instant(atNanoseconds: insert(measured: call))
    }

    /// ``insert(_:)`` for a call whose `deadlineNanoseconds` the caller set with
    /// ``nanoseconds(at:)``; returns the due time in nanoseconds from the origin. The core's
    /// per-call path: no `Duration` or `Instant` arithmetic (128-bit, and a tenth of the loop's
    /// time at 1,024 requests in flight when it was done three times per call).
    mutating func insert(measured call: PendingCall) -> Int64 {
        let millisecond = Self.millisecond(ofNanoseconds: call.deadlineNanoseconds)
        let bucket: DeadlineBucket
        if let last = lastBucket, last.millisecond == millisecond {
            bucket = last
        } else if let existing = buckets[millisecond] {
            bucket = existing
            lastBucket = existing
        } else {
            bucket = DeadlineBucket(millisecond: millisecond)
            buckets[millisecond] = bucket
            milliseconds.insert(millisecond)
            lastBucket = bucket
        }
        call.deadlineSlot = bucket.calls.count
        call.deadlineBucket = bucket
        bucket.calls.append(call)
        count += 1
        return Self.dueNanoseconds(of: millisecond)
    }

    /// Takes the call out at once (answered or given up); a call not in the index is ignored.
    mutating func remove(_ call: PendingCall) {
        guard let bucket = call.deadlineBucket else { return }
        let slot = call.deadlineSlot
        guard slot < bucket.calls.count, bucket.calls[slot] === call else { return }
        let last = bucket.calls.removeLast()
        if last !== call {
            bucket.calls[slot] = last
            last.deadlineSlot = slot
        }
        if bucket.calls.isEmpty { bucket.calls = [] }
        call.deadlineBucket = nil
        call.deadlineSlot = -1
        count -= 1
    }

    /// When the earliest non-empty bucket becomes due (skipping and dropping emptied buckets).
    mutating func nextDueTime() -> ContinuousClock.Instant? {
        nextDueNanoseconds().map(instant(atNanoseconds:))
    }

    /// ``nextDueTime()`` in nanoseconds from the origin.
    mutating func nextDueNanoseconds() -> Int64? {
        while let first = milliseconds.first {
            guard let bucket = buckets[first], !bucket.calls.isEmpty else {
                milliseconds.removeFirst()
                if let dropped = buckets.removeValue(forKey: first), dropped === lastBucket { lastBucket = nil }
                continue
            }
            return Self.dueNanoseconds(of: first)
        }
        return nil
    }

    /// Removes and returns the buckets due at `now` (their milliseconds have ended), earliest
    /// first. Their calls still point at them: the caller clears ``PendingCall/deadlineBucket``
    /// as it expires each call, so each is touched once.
    mutating func takeDue(at now: ContinuousClock.Instant) -> [DeadlineBucket] {
        let current = Self.millisecond(ofNanoseconds: nanoseconds(at: now))
        var due: [DeadlineBucket] = []
        while let first = milliseconds.first, first < current {
            milliseconds.removeFirst()
            guard let bucket = buckets.removeValue(forKey: first) else { continue }
            if bucket === lastBucket { lastBucket = nil }
            count -= bucket.calls.count
            if !bucket.calls.isEmpty { due.append(bucket) }
        }
        return due
    }

    /// Nanoseconds from the origin to `instant`, rounded toward negative infinity (also before the
    /// origin), saturating about 292 years away (a timeout that long never fires).
    func nanoseconds(at instant: ContinuousClock.Instant) -> Int64 {
        Self.nanoseconds(at: instant, since: origin)
    }

    /// ``nanoseconds(at:)`` for an index whose origin is `origin`. The core's per-call form: a
    /// method call on its stored index copied the whole struct (three references) each time.
    static func nanoseconds(at instant: ContinuousClock.Instant, since origin: ContinuousClock.Instant) -> Int64 {
        (instant - origin).nanoseconds(clampedTo: .max)
    }

    /// The instant `nanoseconds` after the origin.
    func instant(atNanoseconds nanoseconds: Int64) -> ContinuousClock.Instant {
        origin.advanced(by: .nanoseconds(nanoseconds))
    }

    /// The end of `millisecond` (when its bucket is due), in nanoseconds from the origin.
    private static func dueNanoseconds(of millisecond: Int64) -> Int64 {
        let (due, overflow) = (millisecond + 1).multipliedReportingOverflow(by: 1_000_000)
        return overflow ? .max : due
    }

    /// The millisecond that contains the instant `nanoseconds` after the origin (rounded down).
    private static func millisecond(ofNanoseconds nanoseconds: Int64) -> Int64 {
        let milliseconds = nanoseconds / 1_000_000
        return nanoseconds < 0 && nanoseconds % 1_000_000 != 0 ? milliseconds - 1 : milliseconds
    }
}

/// The calls whose deadlines fall in one millisecond. A class, so a call can point at its bucket.
final class DeadlineBucket {
    let millisecond: Int64
    /// Unchecked exclusivity: confined to the client's loop, like the core that owns it.
    @exclusivity(unchecked) var calls: [PendingCall] = []

    init(millisecond: Int64) {
        self.millisecond = millisecond
    }
}

/// A binary min-heap of distinct milliseconds.
struct MillisecondHeap {
    private var storage: [Int64] = []

    var first: Int64? { storage.first }

    mutating func insert(_ value: Int64) {
        storage.append(value)
        var child = storage.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard storage[child] < storage[parent] else { return }
            storage.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !storage.isEmpty else { return }
        let last = storage.removeLast()
        guard !storage.isEmpty else { return }
        storage[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < storage.count, storage[left] < storage[smallest] { smallest = left }
            if right < storage.count, storage[right] < storage[smallest] { smallest = right }
            guard smallest != parent else { return }
            storage.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
