import LongLinkTransport

/// Work scheduled on a ``LongLinkClock``, which can be called off.
public protocol ScheduledWork: Sendable {
    /// Calls the work off; does nothing if it already ran.
    func cancel()
}

/// The time source behind every deadline, heartbeat, backoff and ack delay of a client.
///
/// The default, ``SystemClock``, reads `ContinuousClock` and fires on the client's event loop. Tests
/// inject a manual clock (`ManualClock` in `LongLinkTesting`) so that timeouts and heartbeats are
/// driven without waiting.
public protocol LongLinkClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }

    /// Runs `work` on `loop` once `deadline` has passed.
    func schedule(
        at deadline: ContinuousClock.Instant, on loop: EventLoop, _ work: @escaping @Sendable () -> Void
    ) -> any ScheduledWork
}

extension LongLinkClock {
    /// Suspends until `deadline`, or throws `CancellationError` as soon as the task is cancelled.
    ///
    /// Unlike `Task.sleep`, a cancelled sleep releases its timer at once, so a request that is
    /// answered long before its deadline holds no memory until then.
    public func sleep(until deadline: ContinuousClock.Instant, on loop: EventLoop) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                guard sleeper.install(continuation) else {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                let work = schedule(at: deadline, on: loop) { sleeper.finish(with: nil) }
                sleeper.attach(work)
            }
        } onCancel: {
            sleeper.finish(with: CancellationError())
        }
    }
}

/// One sleep's continuation and timer: whichever of the timer and cancellation comes first resumes
/// the continuation; the other finds nothing to do.
private final class Sleeper: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var work: (any ScheduledWork)?
        var finished = false
    }

    private let state = Locked(State())

    /// Stores the continuation; false when the sleep was already cancelled.
    func install(_ continuation: CheckedContinuation<Void, any Error>) -> Bool {
        state.withLock { state in
            guard !state.finished else { return false }
            state.continuation = continuation
            return true
        }
    }

    func attach(_ work: any ScheduledWork) {
        let cancelNow = state.withLock { state -> Bool in
            guard !state.finished else { return true }
            state.work = work
            return false
        }
        if cancelNow { work.cancel() }
    }

    func finish(with error: (any Error)?) {
        let (continuation, work) = state.withLock {
            state -> (CheckedContinuation<Void, any Error>?, (any ScheduledWork)?) in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            defer {
                state.continuation = nil
                state.work = nil
            }
            return (state.continuation, state.work)
        }
        if error != nil { work?.cancel() }
        if let error { continuation?.resume(throwing: error) } else { continuation?.resume() }
    }
}

/// The real clock: `ContinuousClock` time, timers on the event loop.
public struct SystemClock: LongLinkClock {
    /// Creates the clock.
    public init() {}

    /// `ContinuousClock.now`.
    public var now: ContinuousClock.Instant { ContinuousClock.now }

    /// Schedules `work` as an event-loop timer.
    public func schedule(
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
