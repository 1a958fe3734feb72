/// The timers of one event loop: a binary min-heap ordered by (deadline, id), so cancelling is
/// O(log n) and cancelled timers free their memory at once.
///
/// The heap holds small nodes (deadline, id, slot); a timer's closure and its heap position live in
/// a slot table, so sifting moves 24-byte nodes and updates positions in an array. Only inserting,
/// firing and cancelling touch the id-to-slot dictionary (once each): with a hashed position per
/// swap, expiring 100,000 timers at once spent most of its time hashing.
///
/// Ids grow monotonically, so timers with equal deadlines fire in the order they were scheduled.
/// Loop thread only.
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var id: UInt64
        var work: @Sendable () -> Void
    }

    private struct Node {
        var deadline: UInt64
        var id: UInt64
        var slot: Int
    }

    private struct Slot {
        var work: (@Sendable () -> Void)?
        var position: Int
    }

    private var heap: [Node] = []
    private var slots: [Slot] = []
    /// Slots free for reuse.
    private var freeSlots: [Int] = []
    private var slotOfID: [UInt64: Int] = [:]

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }

    /// The earliest deadline, if any timer is scheduled.
    var earliestDeadline: UInt64? { heap.first?.deadline }

    mutating func insert(_ entry: Entry) {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = Slot(work: entry.work, position: heap.count)
        } else {
            slot = slots.count
            slots.append(Slot(work: entry.work, position: heap.count))
        }
        slotOfID[entry.id] = slot
        heap.append(Node(deadline: entry.deadline, id: entry.id, slot: slot))
        siftUp(heap.count - 1)
    }

    /// Removes the timer with `id`; returns false when it is not scheduled (fired or never inserted).
    @discardableResult
    mutating func remove(id: UInt64) -> Bool {
        guard let slot = slotOfID.removeValue(forKey: id) else {
            return false
        }
        _ = removeNode(at: slots[slot].position)
        return true
    }

    /// Removes and returns the earliest timer if its deadline is at or before `now`.
    mutating func popExpired(now: UInt64) -> Entry? {
        guard let first = heap.first, first.deadline <= now else {
            return nil
        }
        slotOfID[first.id] = nil
        return removeNode(at: 0)
    }

    mutating func removeAll() {
        heap.removeAll()
        slots.removeAll()
        freeSlots.removeAll()
        slotOfID.removeAll()
    }

    /// Takes the node at `index` out of the heap and frees its slot (the caller has already removed
    /// its id); returns its entry.
    private mutating func removeNode(at index: Int) -> Entry {
        let removed = heap[index]
        let work = slots[removed.slot].work!
        slots[removed.slot].work = nil
        freeSlots.append(removed.slot)
        let last = heap.removeLast()
        if heap.isEmpty, slots.count > 1_024 {
            // After a burst (100,000 request timeouts), give the slot table back.
            slots = []
            freeSlots = []
            return Entry(deadline: removed.deadline, id: removed.id, work: work)
        }
        if index < heap.count {
            heap[index] = last
            slots[last.slot].position = index
            if index > 0 && Self.less(heap[index], heap[(index - 1) / 2]) {
                siftUp(index)
            } else {
                siftDown(index)
            }
        }
        return Entry(deadline: removed.deadline, id: removed.id, work: work)
    }

    private static func less(_ a: Node, _ b: Node) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    /// Moves the node at `start` up to its place, shifting parents down instead of swapping.
    private mutating func siftUp(_ start: Int) {
        let node = heap[start]
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.less(node, heap[parent]) else {
                break
            }
            heap[child] = heap[parent]
            slots[heap[child].slot].position = child
            child = parent
        }
        heap[child] = node
        slots[node.slot].position = child
    }

    /// Moves the node at `start` down to its place, shifting children up instead of swapping.
    private mutating func siftDown(_ start: Int) {
        let node = heap[start]
        let count = heap.count
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < count else {
                break
            }
            let right = left + 1
            var smallest = left
            if right < count && Self.less(heap[right], heap[left]) {
                smallest = right
            }
            guard Self.less(heap[smallest], node) else {
                break
            }
            heap[parent] = heap[smallest]
            slots[heap[parent].slot].position = parent
            parent = smallest
        }
        heap[parent] = node
        slots[node.slot].position = parent
    }
}
