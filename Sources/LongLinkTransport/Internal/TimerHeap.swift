/// The timers of one event loop: a binary min-heap ordered by (deadline, id) with an index from id to
/// heap position, so cancelling is O(log n) and cancelled timers free their memory at once.
///
/// Ids grow monotonically, so timers with equal deadlines fire in the order they were scheduled.
/// Loop thread only.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var id: UInt64
        var work: @Sendable () -> Void
    }

    private var heap: [Entry] = []
    private var positions: [UInt64: Int] = [:]

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// The earliest deadline, if any timer is scheduled.
    var earliestDeadline: UInt64? { heap.first?.deadline }

    mutating func insert(_ entry: Entry) {
        heap.append(entry)
        positions[entry.id] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Removes the timer with `id`; returns false when it is not scheduled (fired or never inserted).
    @discardableResult
    mutating func remove(id: UInt64) -> Bool {
        guard let index = positions[id] else {
            return false
        }
        removeEntry(at: index)
        return true
    }

    /// Removes and returns the earliest timer if its deadline is at or before `now`.
    mutating func popExpired(now: UInt64) -> Entry? {
        guard let first = heap.first, first.deadline <= now else {
            return nil
        }
        return removeEntry(at: 0)
    }

    mutating func removeAll() {
        heap.removeAll()
        positions.removeAll()
    }

    @discardableResult
    private mutating func removeEntry(at index: Int) -> Entry {
        let removed = heap[index]
        positions[removed.id] = nil
        let last = heap.removeLast()
        if index < heap.count {
            heap[index] = last
            positions[last.id] = index
            if index > 0 && Self.less(heap[index], heap[(index - 1) / 2]) {
                siftUp(index)
            } else {
                siftDown(index)
            }
        }
        return removed
    }

    private static func less(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(heap[child], heap[parent]) else {
                break
            }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else {
                break
            }
            let right = left + 1
            var smallest = left
            if right < heap.count && Self.less(heap[right], heap[left]) {
                smallest = right
            }
            guard Self.less(heap[smallest], heap[parent]) else {
                break
            }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ i: Int, _ j: Int) {
        heap.swapAt(i, j)
        positions[heap[i].id] = i
        positions[heap[j].id] = j
    }
}
