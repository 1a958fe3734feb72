/// Remembers which reliable-push seqs were delivered to the app, so that a redelivery (after a
/// reconnect, a second `Sync`, or a lost `Ack`) is dropped instead of delivered twice.
///
/// The delivered seqs are kept as sorted, disjoint runs (`5...9`, `12...12`): pushes arrive mostly
/// in order, so there are few runs. A seq counts as delivered only if this client delivered it;
/// nothing is assumed about seqs it never saw, so no server (a restarted one, or a hostile one
/// sending seq 2^64-1 first) can make it drop and acknowledge a push the app never got.
///
/// Bounded: past `capacity` runs the oldest run is forgotten. Forgetting can only let a repeat of
/// an old seq through (delivered twice), never hide a new one; and old seqs are the least likely to
/// be repeated, because their acks went out long ago.
struct PushDeduplicator {
    private var runs: [ClosedRange<UInt64>] = []
    let capacity: Int

    init(capacity: Int = 4_096) {
        self.capacity = capacity
    }

    /// How many runs are held (for tests of the bound).
    var runCount: Int { runs.count }

    /// True when `seq` was delivered before.
    func wasDelivered(_ seq: UInt64) -> Bool {
        guard let last = runs.last else { return false }
        if last.contains(seq) { return true }
        let index = firstRun(above: seq)
        return index > 0 && runs[index - 1].contains(seq)
    }

    /// Records `seq` as delivered.
    mutating func markDelivered(_ seq: UInt64) {
        // In order: the seq right after the newest run.
        if let last = runs.last, last.upperBound < .max, seq == last.upperBound + 1 {
            runs[runs.count - 1] = last.lowerBound...seq
            return
        }
        let index = firstRun(above: seq)
        if index > 0, runs[index - 1].contains(seq) { return }
        let joinsBelow = index > 0 && seq > 0 && runs[index - 1].upperBound == seq - 1
        let joinsAbove = index < runs.count && seq < .max && runs[index].lowerBound == seq + 1
        switch (joinsBelow, joinsAbove) {
        case (true, true):
            runs[index - 1] = runs[index - 1].lowerBound...runs[index].upperBound
            runs.remove(at: index)
        case (true, false):
            runs[index - 1] = runs[index - 1].lowerBound...seq
        case (false, true):
            runs[index] = seq...runs[index].upperBound
        case (false, false):
            runs.insert(seq...seq, at: index)
            if runs.count > capacity { runs.removeFirst() }
        }
    }

    /// The index of the first run that starts above `seq` (`runs.count` if none does).
    private func firstRun(above seq: UInt64) -> Int {
        var low = 0
        var high = runs.count
        while low < high {
            let middle = (low + high) / 2
            if runs[middle].lowerBound > seq { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
