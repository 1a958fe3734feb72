/// When a connection's `Sync` replays its principal's unacknowledged reliable pushes: at most one
/// replay at a time, and at most one begun per ``interval``
/// (``ServerConfiguration/syncReplayInterval``).
///
/// A replay sends every unacknowledged push again from the first, so a client sending `Sync`s in
/// a loop would otherwise be sent its whole backlog once per `Sync` (the store read once per
/// page). A `Sync` the gate does not answer at once is not lost: it waits as one pending replay,
/// begun when the running one has caught up and the interval since it began has passed, however
/// many `Sync`s arrive meanwhile. A `Sync` needs a replay only for pushes sent before it, so one
/// that arrives when no push was sent since the last replay began is answered by nothing: that
/// replay, running or done, brings (or brought) every push there is.
///
/// A plain value: the connection tells it what happened and performs the action it returns
/// (restart the push window and pump, or arm the timer).
struct SyncGate {
    /// The shortest time between the beginnings of two replays.
    let interval: Duration
    /// A replay began and has not yet sent the last push stored when it was read.
    private(set) var isReplaying = false
    /// When the last replay began (nil: none yet on this binding).
    private(set) var lastStart: ContinuousClock.Instant?
    /// A `Sync` asked for a replay the gate has not begun yet.
    private(set) var isPending = false
    /// A reliable push went out since the last replay began.
    private(set) var sentSinceStart = false
    /// The connection holds a timer that calls ``timerFired(at:)``.
    private(set) var isTimerArmed = false

    init(interval: Duration) {
        self.interval = interval
    }

    /// What the connection does.
    enum Action: Equatable {
        /// Start the push window afresh and pump from the first unacknowledged push.
        case replay
        /// Call ``timerFired(at:)`` at this instant.
        case armTimer(at: ContinuousClock.Instant)
        /// Nothing now.
        case none
    }

    /// A `Sync` arrived.
    mutating func syncReceived(at now: ContinuousClock.Instant) -> Action {
        // Nothing went out since the last replay began: it covers everything, as it reads from the
        // first unacknowledged push (and pushes stored meanwhile go out as any live push).
        if lastStart != nil, !sentSinceStart { return .none }
        isPending = true
        return next(at: now)
    }

    /// The running replay sent the last push its store holds (a read returned less than asked).
    mutating func replayCaughtUp(at now: ContinuousClock.Instant) -> Action {
        guard isReplaying else { return .none }
        isReplaying = false
        return next(at: now)
    }

    /// The timer armed on ``Action/armTimer(at:)`` fired.
    mutating func timerFired(at now: ContinuousClock.Instant) -> Action {
        isTimerArmed = false
        return next(at: now)
    }

    /// The server began a replay of its own (the push store lost notices or numbered anew): it
    /// brings what a pending `Sync` asked for too.
    mutating func replayStarted(at now: ContinuousClock.Instant) {
        start(at: now)
    }

    /// Reliable pushes went out.
    mutating func pushesSent() {
        sentSinceStart = true
    }

    /// The connection was bound to another principal: its first `Sync` replays at once. The
    /// connection cancels its timer.
    mutating func principalChanged() {
        self = SyncGate(interval: interval)
    }

    /// Begins the pending replay when nothing runs and the interval has passed, or says when to
    /// look again.
    private mutating func next(at now: ContinuousClock.Instant) -> Action {
        guard isPending, !isReplaying else { return .none }
        guard let lastStart, now < lastStart.advanced(by: interval) else {
            start(at: now)
            return .replay
        }
        guard !isTimerArmed else { return .none }
        isTimerArmed = true
        return .armTimer(at: lastStart.advanced(by: interval))
    }

    private mutating func start(at now: ContinuousClock.Instant) {
        isReplaying = true
        isPending = false
        sentSinceStart = false
        lastStart = now
    }
}
