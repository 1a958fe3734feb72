/// Deadlines with ``DeadlineStrategy/deadlineHeap``: every pending request's deadline in one index,
/// served by one timer that this machine places (the core holds its handle).
extension ClientStateMachine {
    /// How many deadline entries one firing of the timer takes at most, so that the loop goes back
    /// to its sockets between slices when many requests time out together.
    static var expiriesPerSlice: Int { 1_024 }

    /// Expiries are handled at most once a millisecond: a request may time out up to that late.
    static var deadlineResolution: Duration { .milliseconds(1) }

    /// Tracks the deadline of `request`, just admitted; the instant to move the deadline timer to,
    /// when it must move (an earlier deadline; a later one never moves it).
    mutating func trackDeadline(_ request: PendingRequest) -> ContinuousClock.Instant? {
        deadlines.insert(request.id, deadline: request.deadline)
        let book = self.book
        deadlines.compact(liveCount: book.count) { book.contains($0) }
        return moveDeadlineTimer(notBefore: nil)
    }

    /// The deadline timer fired at `now`: the ids of the requests whose deadline passed, at most
    /// ``expiriesPerSlice`` (some may have ended already). Once the core expired them, it asks
    /// ``deadlineTimerAfterExpiries(at:sliceWasFull:)`` when the timer fires again.
    mutating func deadlinesDue(at now: ContinuousClock.Instant) -> [UInt64] {
        deadlineTimerAt = nil
        return deadlines.popDue(at: now, limit: Self.expiriesPerSlice)
    }

    /// When the deadline timer fires next after the expiries of a firing at `now`: with more due
    /// (`sliceWasFull`), at the loop's next turn; otherwise at the earliest deadline left, at least
    /// ``deadlineResolution`` on. Nil when no deadline is left.
    mutating func deadlineTimerAfterExpiries(at now: ContinuousClock.Instant, sliceWasFull: Bool)
        -> ContinuousClock.Instant?
    {
        moveDeadlineTimer(notBefore: sliceWasFull ? now : now.advanced(by: Self.deadlineResolution))
    }

    /// Places the one timer at the earliest deadline held (not before `floor`); nil when it stays.
    private mutating func moveDeadlineTimer(notBefore floor: ContinuousClock.Instant?) -> ContinuousClock.Instant? {
        guard var earliest = deadlines.earliest else { return nil }
        if let floor, earliest < floor { earliest = floor }
        if let armedAt = deadlineTimerAt, armedAt <= earliest { return nil }
        deadlineTimerAt = earliest
        return earliest
    }
}
