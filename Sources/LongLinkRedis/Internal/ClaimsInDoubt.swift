internal import LongLinkWire

/// The claims a ``RedisDedupeStore`` instance may have made without hearing back, so that a
/// claim asked again (the server retries a call that failed for a reason that passes) recognizes
/// its own lost claim instead of waiting for it as for another server's.
///
/// A claim is `SET NX` of the instance's running value: when its reply is lost (the connection
/// closed, Redis paused past the command timeout, the call cancelled) the entry may hold that
/// value though no handler runs for it. The next claim of the entry then finds the instance's
/// own value. It may run the request only if the value comes from such a lost claim, never from
/// a claim whose handler ran: so an entry is *in doubt* from a failed claim until an answer about
/// it arrives, and it is recognized at most once (the first recognition takes it out). A claim
/// that ran here leaves its value in Redis until its term ends when its reply could not be stored
/// or its abandon failed: such an entry is *settling*, and is never recognized until then, whatever
/// was recorded of it.
///
/// A plain value; the store keeps it under a lock. Bounded by ``capacity``: at the bound expired
/// records go first; a doubt that still finds no room is not recorded (its claim, if it was
/// made, is then waited for as another's, and the request answered at its deadline: nothing
/// runs twice), and a settling entry that finds no room stops every recognition until its term
/// ends.
struct ClaimsInDoubt {
    /// The most entries held (in doubt and settling together).
    let capacity: Int
    /// Entry name → until when a lost claim's value may stay in Redis (its term from the attempt).
    private var doubts: [PrincipalKey: ContinuousClock.Instant] = [:]
    /// Entry name → until when a claim that ran here may hold the instance's value.
    private var settling: [PrincipalKey: ContinuousClock.Instant] = [:]
    /// No recognition before this instant: a settling entry found no room.
    private var refuseAllUntil: ContinuousClock.Instant?
    /// When full, the first record expires then: no room is looked for before (a flood of failed
    /// claims at the bound costs one pass over the records per expiry, not one per claim).
    private var fullUntil: ContinuousClock.Instant?

    init(capacity: Int = 16_384) {
        self.capacity = max(1, capacity)
    }

    /// Entries held, in doubt and settling.
    var count: Int { doubts.count + settling.count }

    /// A claim of `entry` failed without an answer at `now`; had it been made, it lasts `term`.
    mutating func claimFailed(_ entry: String, term: Duration, at now: ContinuousClock.Instant) {
        let key = PrincipalKey(entry)
        let until = now.advanced(by: term)
        if doubts[key] == nil, !makeRoom(at: now) { return }
        doubts[key] = max(doubts[key] ?? until, until)
    }

    /// Redis answered a claim of `entry` with anything but this instance's own value: whatever a
    /// lost claim did is known now.
    mutating func answered(_ entry: String) {
        doubts[PrincipalKey(entry)] = nil
    }

    /// A claim of `entry` found this instance's own value at `now`. Returns true when it comes from
    /// a lost claim (no handler ran for it): the caller runs the request, and the entry is no
    /// longer in doubt. False otherwise: the value is a claim that ran, or is running, here.
    mutating func recognize(_ entry: String, at now: ContinuousClock.Instant) -> Bool {
        let key = PrincipalKey(entry)
        if let until = settling[key] {
            if now < until { return false }
            settling[key] = nil
        }
        if let refuseAllUntil {
            if now < refuseAllUntil { return false }
            self.refuseAllUntil = nil
        }
        guard let until = doubts.removeValue(forKey: key) else { return false }
        return now < until
    }

    /// A claim of `entry` that ran here is being finished or given up at `now`; until the call
    /// succeeds (``settled(_:)``) the entry may keep this instance's value for `term`.
    mutating func settling(_ entry: String, term: Duration, at now: ContinuousClock.Instant) {
        let key = PrincipalKey(entry)
        let until = now.advanced(by: term)
        doubts[key] = nil
        if settling[key] == nil, !makeRoom(at: now) {
            refuseAllUntil = max(refuseAllUntil ?? until, until)
            return
        }
        settling[key] = max(settling[key] ?? until, until)
    }

    /// The reply of `entry` was stored, or its claim given up: its value left Redis.
    mutating func settled(_ entry: String) {
        settling[PrincipalKey(entry)] = nil
    }

    /// Drops expired records when at the bound; returns whether there is room for one more.
    private mutating func makeRoom(at now: ContinuousClock.Instant) -> Bool {
        guard count >= capacity else { return true }
        if let fullUntil, now < fullUntil { return false }
        doubts = doubts.filter { $0.value > now }
        settling = settling.filter { $0.value > now }
        guard count >= capacity else { return true }
        fullUntil = [doubts.values.min(), settling.values.min()].compactMap { $0 }.min()
        return false
    }
}
