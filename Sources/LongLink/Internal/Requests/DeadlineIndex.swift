internal import LongLinkWire

/// The deadlines of pending requests for ``DeadlineStrategy/deadlineHeap``: a binary min-heap of
/// (deadline, request id), served by one timer for the earliest entry.
///
/// Deadlines are kept as nanoseconds since `origin`, plain integers: the heap's entries are then
/// trivially copied and compared, which matters when 100,000 of them come due at once.
///
/// An answered request is not searched for in the heap: its entry stays until it comes due and is
/// then skipped, because its id is no longer pending. So that such entries cannot pile up (a
/// stream of fast replies with long timeouts), the heap is rebuilt from the live entries once it
/// holds more than twice as many entries as there are live requests.
struct DeadlineIndex {
    private struct Entry {
        var deadline: Int64
        var id: UInt64
    }

    private var heap: [Entry] = []
    /// The instant that time 0 of the heap stands for.
    let origin: ContinuousClock.Instant

    init(origin: ContinuousClock.Instant) {
        self.origin = origin
    }

    /// Entries held, live or stale.
    var entryCount: Int { heap.count }

    /// The earliest deadline held (possibly of a request that has ended since).
    var earliest: ContinuousClock.Instant? {
        heap.first.map { origin.advanced(by: .nanoseconds($0.deadline)) }
    }

    mutating func insert(_ id: UInt64, deadline: ContinuousClock.Instant) {
        heap.append(Entry(deadline: time(deadline), id: id))
        siftUp(heap.count - 1)
    }

    /// Removes and returns the ids of the entries due at `now`, earliest first, at most `limit` of
    /// them (live or not: the caller skips the ones that ended).
    mutating func popDue(at now: ContinuousClock.Instant, limit: Int = .max) -> [UInt64] {
        let now = time(now)
        var due: [UInt64] = []
        while due.count < limit, let first = heap.first, first.deadline <= now {
            due.append(first.id)
            removeFirst()
        }
        return due
    }

    /// Drops stale entries when they outnumber the live ones; `isLive` tells which ids still wait.
    mutating func compact(liveCount: Int, isLive: (UInt64) -> Bool) {
        guard heap.count > 2 * liveCount + 1_024 else { return }
        let live = heap.filter { isLive($0.id) }
        heap = []
        heap.reserveCapacity(live.count)
        for entry in live {
            heap.append(entry)
            siftUp(heap.count - 1)
        }
    }

    mutating func removeAll() {
        heap.removeAll()
    }

    /// `instant` on the heap's time line. Clamped to a quarter of the `Int64` range (about 73 years
    /// either way), far beyond any timeout.
    private func time(_ instant: ContinuousClock.Instant) -> Int64 {
        origin.duration(to: instant).nanoseconds(clampedTo: Int64.max / 4)
    }

    private mutating func removeFirst() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }
}
