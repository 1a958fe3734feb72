/// Collects the seqs of reliable pushes the app has taken, and decides when to send them as one
/// `Ack`: as soon as `maxBatch` are waiting, or when the timer the core arms for the first one of a
/// batch fires (``ClientConfiguration/ackDelay`` later).
struct AckBatcher {
    enum AddAction: Equatable {
        /// Nothing to do now.
        case none
        /// The first seq of a batch: arm the flush timer.
        case armTimer
        /// The batch is full: send it now (and disarm the timer).
        case flush([UInt64])
    }

    let maxBatch: Int
    private(set) var waiting: [UInt64] = []

    init(maxBatch: Int = 256) {
        self.maxBatch = max(1, maxBatch)
    }

    mutating func add(_ seq: UInt64) -> AddAction {
        waiting.append(seq)
        if waiting.count >= maxBatch { return .flush(take()) }
        return waiting.count == 1 ? .armTimer : .none
    }

    /// Everything waiting, for a timer flush or before a close.
    mutating func take() -> [UInt64] {
        defer { waiting.removeAll(keepingCapacity: true) }
        return waiting
    }

    /// Acks not sent when a connection drops are not needed: the server redelivers those pushes
    /// after `Sync` and they are re-acked as repeats. Dropping them keeps memory bounded.
    mutating func reset() {
        waiting.removeAll()
    }
}
