/// The pending calls ordered by deadline, for the client's single deadline timer.
///
/// An indexed binary min-heap: each call remembers its slot, so a call answered before its
/// deadline leaves the heap in O(log n) at once instead of lingering until its deadline (which
/// would hold memory for every answered call for the length of its timeout).
struct DeadlineHeap {
    private var calls: [PendingCall] = []

    var isEmpty: Bool { calls.isEmpty }
    var count: Int { calls.count }
    var earliest: PendingCall? { calls.first }

    mutating func insert(_ call: PendingCall) {
        call.heapIndex = calls.count
        calls.append(call)
        siftUp(calls.count - 1)
    }

    mutating func remove(_ call: PendingCall) {
        let index = call.heapIndex
        guard index >= 0, index < calls.count, calls[index] === call else { return }
        call.heapIndex = -1
        let last = calls.removeLast()
        guard index < calls.count else { return }
        calls[index] = last
        last.heapIndex = index
        siftDown(index)
        siftUp(index)
    }

    /// Removes and returns every call whose deadline is at or before `now`, earliest first.
    mutating func popDue(at now: ContinuousClock.Instant) -> [PendingCall] {
        var due: [PendingCall] = []
        while let first = calls.first, first.deadline <= now {
            remove(first)
            due.append(first)
        }
        return due
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard calls[child].deadline < calls[parent].deadline else { return }
            swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < calls.count, calls[left].deadline < calls[smallest].deadline { smallest = left }
            if right < calls.count, calls[right].deadline < calls[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            swapAt(parent, smallest)
            parent = smallest
        }
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        calls.swapAt(a, b)
        calls[a].heapIndex = a
        calls[b].heapIndex = b
    }
}
