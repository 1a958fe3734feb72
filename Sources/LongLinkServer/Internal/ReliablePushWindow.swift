/// The send window of one connection's reliable pushes: how many were sent since the last `Sync`
/// (or binding) and not acknowledged yet, at most ``size``.
///
/// A plain value: the connection asks it how many pushes it may send, tells it what it sent and
/// what the client acknowledged, and arms the window timer when it says so.
struct ReliablePushWindow {
    /// The most pushes outstanding (``ServerConfiguration/reliablePushWindow``).
    let size: Int
    /// The seq of the last push sent since the window started afresh (0: none yet).
    private(set) var lastSentSeq: UInt64 = 0
    /// Pushes sent and not yet acknowledged.
    private(set) var outstanding = 0
    /// The last pump stopped at a full window (not at an unwritable socket or an empty store), so
    /// an `Ack` that frees room must pump again.
    private(set) var isFull = false
    /// An `Ack` freed room since the window timer was armed.
    private(set) var ackedSinceTimerArmed = false
    /// Counts restarts: a read of a shared store begun before one is stale when it returns.
    private(set) var generation: UInt64 = 0
    /// The epoch of the last push sent since the window started afresh (nil: none, or not said).
    private(set) var lastSentEpoch: UInt64?

    init(size: Int) {
        self.size = size
    }

    /// How many more pushes may be sent now.
    var room: Int { max(0, size - outstanding) }

    /// Pushes go out again from the first unacknowledged one (after `Sync`, or for a new
    /// principal), so what was outstanding no longer counts.
    mutating func restart() {
        generation &+= 1
        lastSentSeq = 0
        lastSentEpoch = nil
        outstanding = 0
        isFull = false
    }

    /// The connection was bound to another principal, whose seqs are another sequence: nothing of
    /// it was sent yet. (Which seqs an `Ack` may delete is ``AckMerger``'s.)
    mutating func principalChanged() {
        restart()
    }

    /// A pump begins; it sets ``isFull`` again if it stops at a full window.
    mutating func pumpStarted() {
        isFull = false
    }

    /// The pump found no room: the connection arms the window timer.
    mutating func filled() {
        isFull = true
    }

    /// `count` pushes went out, the last with seq `lastSeq` (of `epoch`, when the store says).
    mutating func sent(count: Int, lastSeq: UInt64, epoch: UInt64? = nil) {
        outstanding += count
        lastSentSeq = lastSeq
        if let epoch { lastSentEpoch = epoch }
    }

    /// The client acknowledged `seqs`. Returns true when the window was full and now has room, so
    /// that the connection pumps again.
    ///
    /// Only seqs this connection may have sent since the window started free room; others (zero,
    /// not sent yet, repeats) are clamped so that the window never opens beyond its size.
    mutating func acknowledged(_ seqs: [UInt64]) -> Bool {
        guard outstanding > 0 else { return false }
        var freed = 0
        for seq in seqs where seq > 0 && seq <= lastSentSeq { freed += 1 }
        outstanding = max(0, outstanding - freed)
        if freed > 0 { ackedSinceTimerArmed = true }
        return isFull && outstanding < size
    }

    /// The window timer was armed while the window is full.
    mutating func timerArmed() {
        ackedSinceTimerArmed = false
    }

    /// What to do when the window timer fires.
    enum TimerAction: Equatable {
        /// Room was freed meanwhile, or the window is not full: nothing to do.
        case none
        /// The client acknowledges, only not enough yet: wait another timeout.
        case rearm
        /// No `Ack` freed room in time: the outstanding pushes are parked with the client, so the
        /// window starts counting afresh (their acks, should they come, are clamped at zero); pump.
        case reopen
    }

    /// The window timer fired.
    mutating func timerFired() -> TimerAction {
        guard isFull else { return .none }
        if ackedSinceTimerArmed { return .rearm }
        outstanding = 0
        return .reopen
    }
}
