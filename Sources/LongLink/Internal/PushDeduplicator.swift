/// Remembers which reliable-push seqs were delivered to the app, so that a redelivery (after a
/// reconnect, a second `Sync`, or a lost `Ack`) is dropped instead of delivered twice.
///
/// Seqs at or below `watermark` were all delivered; seqs above it that were delivered out of order
/// sit in `above` until the gap below them fills. The first reliable seq *received* (after the first
/// `Sync`, the server sends its lowest unacknowledged seq first) is where the watermark starts: just
/// below it, every seq was acknowledged before this client existed. Bounded: when `above` outgrows
/// `capacity`, the watermark jumps to its smallest element (the gap is given up on).
struct PushDeduplicator {
    private(set) var watermark: UInt64?
    private var above: Set<UInt64> = []
    let capacity: Int

    init(capacity: Int = 65_536) {
        self.capacity = capacity
    }

    /// True when `seq` was delivered before.
    func wasDelivered(_ seq: UInt64) -> Bool {
        guard let watermark else { return false }
        // `isEmpty` first: in order, `above` stays empty, and a lookup would still hash the seq.
        return seq <= watermark || (!above.isEmpty && above.contains(seq))
    }

    /// Notes a received seq: the first one sets the floor just below it.
    mutating func observeReceived(_ seq: UInt64) {
        if watermark == nil { watermark = seq - 1 }
    }

    /// Records `seq` as delivered.
    mutating func markDelivered(_ seq: UInt64) {
        guard let current = watermark else {
            watermark = seq
            return
        }
        guard seq > current else { return }
        if seq == current + 1 {
            var next = seq
            while !above.isEmpty, above.remove(next + 1) != nil { next += 1 }
            watermark = next
        } else {
            above.insert(seq)
            if above.count > capacity, let lowest = above.min() {
                above.remove(lowest)
                watermark = lowest
                var next = lowest
                while above.remove(next + 1) != nil { next += 1 }
                watermark = next
            }
        }
    }

    /// How many seqs wait above the watermark (for statistics and tests).
    var pendingAboveWatermark: Int { above.count }
}
