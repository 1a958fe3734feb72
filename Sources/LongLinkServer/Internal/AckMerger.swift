/// Which acknowledged seqs of one connection go to the push store, and when: a plain value the
/// connection feeds with what it sent and what the client acknowledged, and that hands back the
/// store calls to make, one at a time.
///
/// A client that repeats `Ack{[1]}` must not cost the store anything: a seq goes to the store once
/// per seq space, only if this connection sent it, and acks that arrive while a store call is in
/// flight merge into the next call. So a connection makes at most one store call at a time, and
/// at most one per distinct seq it sent, whatever it receives.
///
/// The seq space is the epoch of the pushes sent: when a push of another epoch goes out (the store
/// lost the principal and numbers anew), what was acknowledged before means other pushes, and is
/// forgotten. An `Ack` that names another epoch than the current one is ignored; one that names
/// none (0, an older client) is taken as the current epoch's.
struct AckMerger {
    /// One store call: delete `seqs` of `epoch` (0: the store does not say, delete whatever epoch).
    struct Call: Equatable {
        var seqs: [UInt64]
        var epoch: UInt64
    }

    /// The most seqs one call carries (as one `Ack` does).
    let maxPerCall: Int
    /// The most seqs remembered as acknowledged above ``floor``; past it, further acks are dropped
    /// (the push stays stored and is acknowledged again after its next delivery).
    let rememberLimit: Int

    /// The epoch of the pushes sent in the current seq space (nil: none sent yet).
    private(set) var epoch: UInt64?
    /// Every seq up to this one is acknowledged, or was not stored when this connection first read
    /// the space (the store reads from the oldest unacknowledged push, and seqs only grow).
    private(set) var floor: UInt64 = 0
    /// The highest seq sent in the current space (0: none).
    private(set) var highestSent: UInt64 = 0
    /// Seqs above ``floor`` acknowledged by a call that succeeded.
    private var remembered: Set<UInt64> = []
    /// Seqs waiting for the next call or in the call in flight: not acknowledged yet, so the floor
    /// never rises over them (a call that fails gives them back to later acks).
    private var queued: Set<UInt64> = []
    /// Seqs waiting for the next call, in arrival order.
    private(set) var pending: [UInt64] = []
    /// The call in flight and the space it was made in (nil: none in flight).
    private var inFlight: (call: Call, space: UInt64)?
    /// Counts seq spaces (a new epoch, another principal): a call of an older one changes nothing
    /// of the current one when it returns.
    private var space: UInt64 = 0

    init(maxPerCall: Int = 16_384, rememberLimit: Int = 16_384) {
        self.maxPerCall = max(1, maxPerCall)
        self.rememberLimit = max(1, rememberLimit)
    }

    /// Whether a store call is in flight.
    var isCalling: Bool { inFlight != nil }

    /// How many seqs are remembered above the floor, acknowledged or queued (at most twice
    /// ``rememberLimit``, and five calls' worth queued).
    var rememberedCount: Int { remembered.count + queued.count }

    /// Pushes `first...last` of `epoch` went out (epoch 0: the store does not say).
    mutating func sent(first: UInt64, last: UInt64, epoch: UInt64) {
        if let current = self.epoch, current != epoch {
            startSpace()
        }
        if self.epoch == nil {
            self.epoch = epoch
            floor = first > 0 ? first - 1 : 0
        }
        highestSent = max(highestSent, last)
    }

    /// The connection was bound to another principal: nothing of it was sent yet.
    mutating func principalChanged() {
        startSpace()
    }

    /// An `Ack` of `seqs` in `epoch` arrived. Returns whether its epoch is the current one (else it
    /// is ignored whole), and the store call to make now, if any.
    mutating func received(_ seqs: [UInt64], epoch ackEpoch: UInt64) -> (current: Bool, call: Call?) {
        if ackEpoch != 0, let epoch, epoch != 0, epoch != ackEpoch { return (false, nil) }
        for seq in seqs where seq > floor && seq <= highestSent && !remembered.contains(seq) {
            guard pending.count < maxPerCall * 4, remembered.count < rememberLimit * 2 else { break }
            if queued.insert(seq).inserted { pending.append(seq) }
        }
        return (true, nextCall())
    }

    /// The call in flight returned. A failed one leaves its pushes stored (they come again after the
    /// next `Sync`, and their acks then go to the store again). Returns the next call, if any.
    mutating func callReturned(succeeded: Bool) -> Call? {
        guard let (call, callSpace) = inFlight else { return nil }
        inFlight = nil
        if callSpace == space {
            for seq in call.seqs { queued.remove(seq) }
            if succeeded {
                remembered.formUnion(call.seqs)
                advanceFloor()
            }
        }
        return nextCall()
    }

    private mutating func nextCall() -> Call? {
        guard inFlight == nil, !pending.isEmpty else { return nil }
        let count = min(maxPerCall, pending.count)
        let call = Call(seqs: Array(pending.prefix(count)), epoch: epoch ?? 0)
        pending.removeFirst(count)
        inFlight = (call, space)
        return call
    }

    /// Raises the floor over the acknowledged seqs just above it, and forgets the lowest half of
    /// what is remembered once it passes the limit, so that a gap below (a push the app keeps)
    /// cannot make it grow for ever (a forgotten seq acknowledged again costs one more call).
    private mutating func advanceFloor() {
        while remembered.contains(floor + 1) {
            remembered.remove(floor + 1)
            floor += 1
        }
        guard remembered.count > rememberLimit else { return }
        let sorted = remembered.sorted()
        remembered.subtract(sorted.prefix(sorted.count / 2))
    }

    private mutating func startSpace() {
        space &+= 1
        epoch = nil
        floor = 0
        highestSent = 0
        remembered = []
        queued = []
        pending = []
    }
}
