/// Work scheduled on a ``LongLinkClock``, which can be called off.
public protocol ScheduledWork: Sendable {
    /// Calls the work off; does nothing if it already ran.
    func cancel()
}

/// The time source behind every deadline, heartbeat, backoff and ack delay of a client, and the
/// handshake, heartbeat, drain and push-window timers of a server.
///
/// The default, ``SystemClock``, reads `ContinuousClock` and fires on the connection's own event loop.
/// Tests inject a manual clock (`ManualClock` in `LongLinkTesting`) so that timeouts and heartbeats
/// are driven without waiting. A clock of your own implements ``now`` and
/// ``schedule(at:_:)``; the client or server moves the work to its own event loop when it runs.
public protocol LongLinkClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }

    /// Runs `work` once `deadline` has passed, on any thread, unless the returned work is cancelled
    /// first. A deadline already passed runs `work` soon, never inside this call.
    func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () -> Void) -> any ScheduledWork
}

/// A clock that can run work on a given event loop itself: ``SystemClock`` with the loop's own
/// timers, and the testing kit's manual clock, which waits until the loop has run the work. The
/// client and the server use this, when their clock has it, instead of hopping from
/// ``LongLinkClock/schedule(at:_:)`` to their loop. Package API: the event loop is not part of what users see.
package protocol LoopSchedulingClock: LongLinkClock {
    /// Runs `work` on `loop` once `deadline` has passed.
    func schedule(
        at deadline: ContinuousClock.Instant, on loop: EventLoop, _ work: @escaping @Sendable () -> Void
    ) -> any ScheduledWork
}

/// The real clock: `ContinuousClock` time, timers on the event loop.
public struct SystemClock: LongLinkClock, LoopSchedulingClock {
    /// Creates the clock.
    public init() {}

    /// `ContinuousClock.now`.
    public var now: ContinuousClock.Instant { ContinuousClock.now }

    /// Schedules `work` as a timer on one of the shared event loops.
    public func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () -> Void)
        -> any ScheduledWork
    {
        schedule(at: deadline, on: EventLoopGroup.shared.next(), work)
    }

    /// Schedules `work` as a timer on `loop`.
    package func schedule(
        at deadline: ContinuousClock.Instant, on loop: EventLoop, _ work: @escaping @Sendable () -> Void
    ) -> any ScheduledWork {
        let delay = max(.zero, deadline - ContinuousClock.now)
        return LoopTimerWork(loop: loop, timer: loop.scheduleTimer(after: delay, work))
    }
}

private struct LoopTimerWork: ScheduledWork {
    let loop: EventLoop
    let timer: EventLoopTimer

    func cancel() {
        loop.cancelTimer(timer)
    }
}
