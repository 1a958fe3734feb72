/// The calls the client waits on, by request id.
///
/// Why not a `Dictionary`: request ids are a counter, so the id itself is a perfect hash.
/// Consecutive calls land in consecutive slots, and 100,000 calls expiring together are removed
/// in one sequential sweep instead of 100,000 cache misses at seeded-hash positions (a quarter of
/// the loop's expiry pass in `bench timeouts`). A call remembers its slot, so removing it needs no
/// lookup.
///
/// Open addressing with linear probing and backward-shift deletion (no tombstones). Every probe is
/// bounded by the largest displacement any entry has had since the last rehash, which only our own
/// inserts create: a reply with an id the server made up costs at most that many probes, however
/// full the table is.
struct PendingTable {
    private static let minimumCapacity = 64
    /// Tables up to this many slots keep their size.
    private static let shrinkAbove = 4_096

    /// The id in each slot (meaningful only where `calls` holds a call).
    private var keys: [UInt64]
    /// The call in each slot, nil for an empty slot.
    private var calls: [PendingCall?]
    private var mask: Int
    /// The farthest any entry sits from its home slot; bounds every probe.
    private(set) var maxDisplacement = 0
    private(set) var count = 0

    init() {
        keys = Array(repeating: 0, count: Self.minimumCapacity)
        calls = Array(repeating: nil, count: Self.minimumCapacity)
        mask = Self.minimumCapacity - 1
    }

    var isEmpty: Bool { count == 0 }

    /// The number of slots (a power of two).
    var capacity: Int { mask + 1 }

    @inline(__always)
    private func home(of id: UInt64) -> Int { Int(truncatingIfNeeded: id) & mask }

    /// Adds a call whose id is not in the table yet.
    mutating func insert(_ call: PendingCall) {
        if (count + 1) * 2 > capacity {
            rehash(capacity: capacity * 2)
        } else if capacity > Self.shrinkAbove, count * 16 < capacity {
            // Shrunk here rather than on removal, so that a mass expiry is one sweep with no rehash;
            // and only after a burst: at a steady 1,024 in flight the count swings between a few
            // hundred and 1,024 from one loop pass to the next, and shrinking then rehashed the
            // table over and over (1.3% of the loop in `bench rpc`).
            rehash(capacity: capacity / 4)
        }
        place(call)
        count += 1
    }

    private mutating func place(_ call: PendingCall) {
        var slot = home(of: call.id)
        var displacement = 0
        while calls[slot] != nil {
            slot = (slot + 1) & mask
            displacement += 1
        }
        keys[slot] = call.id
        calls[slot] = call
        call.pendingSlot = slot
        if displacement > maxDisplacement { maxDisplacement = displacement }
    }

    /// The call waiting for `id`, if any.
    func call(for id: UInt64) -> PendingCall? {
        var slot = home(of: id)
        for _ in 0...maxDisplacement {
            guard let call = calls[slot] else { return nil }
            if keys[slot] == id { return call }
            slot = (slot + 1) & mask
        }
        return nil
    }

    /// Takes the call out; a call not in the table is ignored.
    mutating func remove(_ call: PendingCall) {
        let slot = call.pendingSlot
        guard slot >= 0, slot < calls.count, calls[slot] === call else { return }
        call.pendingSlot = -1
        calls[slot] = nil
        count -= 1
        // Backward shift: pull later entries of the probe run into the hole when their home allows,
        // so lookups never need tombstones. An entry more than `maxDisplacement` past the hole
        // cannot belong before it, which bounds the scan.
        var hole = slot
        var next = (slot + 1) & mask
        while (next - hole) & mask <= maxDisplacement, let moved = calls[next] {
            let distanceFromHome = (next - home(of: keys[next])) & mask
            if distanceFromHome >= (next - hole) & mask {
                keys[hole] = keys[next]
                calls[hole] = moved
                moved.pendingSlot = hole
                calls[next] = nil
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    /// Every call, in no particular order (a copy: the caller may change the table meanwhile).
    var all: [PendingCall] {
        var result: [PendingCall] = []
        result.reserveCapacity(count)
        for case let call? in calls { result.append(call) }
        return result
    }

    /// Whether any call satisfies `predicate`.
    func contains(where predicate: (PendingCall) -> Bool) -> Bool {
        for case let call? in calls where predicate(call) { return true }
        return false
    }

    private mutating func rehash(capacity newCapacity: Int) {
        let old = calls
        keys = Array(repeating: 0, count: newCapacity)
        calls = Array(repeating: nil, count: newCapacity)
        mask = newCapacity - 1
        maxDisplacement = 0
        for case let call? in old { place(call) }
    }
}
