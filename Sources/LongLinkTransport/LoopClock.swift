import LongLinkCore

/// A ``LongLinkClock`` as the client's core and the server's connections use it: work runs on a
/// given event loop, directly when the clock can schedule on a loop (``LoopSchedulingClock``, asked once here rather
/// than on every timer), otherwise through a hop from the clock's thread.
package struct LoopClock: Sendable {
    package let base: any LongLinkClock
    private let loopScheduling: (any LoopSchedulingClock)?

    package init(_ base: any LongLinkClock) {
        self.base = base
        self.loopScheduling = base as? any LoopSchedulingClock
    }

    package var now: ContinuousClock.Instant { base.now }

    /// Runs `work` on `loop` once `deadline` has passed.
    package func schedule(
        at deadline: ContinuousClock.Instant, on loop: EventLoop, _ work: @escaping @Sendable () -> Void
    ) -> any ScheduledWork {
        if let loopScheduling { return loopScheduling.schedule(at: deadline, on: loop, work) }
        return base.schedule(at: deadline) { loop.execute(work) }
    }

    /// Suspends until `deadline`, or throws `CancellationError` as soon as the task is cancelled.
    ///
    /// Unlike `Task.sleep`, a cancelled sleep releases its timer on the loop's next turn (at once
    /// on the loop), so a request that is answered long before its deadline holds no memory until then.
    package func sleep(until deadline: ContinuousClock.Instant, on loop: EventLoop) async throws {
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
