/// The ids of requests waiting for a logged-in link, in the order they go out.
///
/// A request that ends while it waits (timed out, cancelled) leaves at once: its id stays in the
/// order array as a hole that sending skips, and the array is compacted when holes outnumber the
/// waiting requests, so memory stays proportional to what really waits.
struct OfflineQueue {
    private var order: [UInt64] = []
    private var head = 0
    private var members: Set<UInt64> = []

    /// How many requests wait.
    var count: Int { members.count }

    var isEmpty: Bool { members.isEmpty }

    /// Slots the order array holds (waiting requests plus holes), for tests of the bound.
    var slotCount: Int { order.count - head }

    func contains(_ id: UInt64) -> Bool { members.contains(id) }

    mutating func append(_ id: UInt64) {
        guard members.insert(id).inserted else { return }
        order.append(id)
    }

    /// Puts `ids` ahead of everything waiting, in the given order (resends go first).
    mutating func prepend(_ ids: [UInt64]) {
        let fresh = ids.filter { members.insert($0).inserted }
        guard !fresh.isEmpty else { return }
        // Rare (a reconnect): the holes go at the same time.
        let added = Set(fresh)
        order = fresh + order[head...].filter { members.contains($0) && !added.contains($0) }
        head = 0
    }

    /// The next waiting id, removed.
    mutating func popFirst() -> UInt64? {
        while head < order.count {
            let id = order[head]
            head += 1
            if members.remove(id) != nil {
                if members.isEmpty { removeAll() }
                return id
            }
        }
        removeAll()
        return nil
    }

    /// Takes `id` out (it ended while waiting); false if it was not waiting.
    @discardableResult
    mutating func remove(_ id: UInt64) -> Bool {
        guard members.remove(id) != nil else { return false }
        if members.isEmpty {
            removeAll()
        } else if slotCount > 2 * members.count + 32 {
            order = order[head...].filter { members.contains($0) }
            head = 0
        }
        return true
    }

    /// Everything waiting, in order; the queue is left empty.
    @discardableResult
    mutating func removeAll() -> [UInt64] {
        let waiting = order[head...].filter { members.contains($0) }
        order.removeAll(keepingCapacity: true)
        head = 0
        members.removeAll()
        return waiting
    }
}
