/// Collects the reliable pushes the app has taken, and decides when to send them as `Ack`s: as soon
/// as `maxBatch` are waiting, or when the timer the core arms for the first one of a batch fires
/// (``ClientConfiguration/ackDelay`` later).
struct AckBatcher {
    enum AddAction: Equatable {
        /// Nothing to do now.
        case none
        /// The first of a batch: arm the flush timer.
        case armTimer
        /// The batch is full: send it now (and disarm the timer).
        case flush([PushKey])
    }

    let maxBatch: Int
    private(set) var waiting: [PushKey] = []

    init(maxBatch: Int = 256) {
        self.maxBatch = max(1, maxBatch)
    }

    mutating func add(_ key: PushKey) -> AddAction {
        waiting.append(key)
        if waiting.count >= maxBatch { return .flush(take()) }
        return waiting.count == 1 ? .armTimer : .none
    }

    /// Everything waiting, for a timer flush or before a close.
    mutating func take() -> [PushKey] {
        defer { waiting.removeAll(keepingCapacity: true) }
        return waiting
    }
}
