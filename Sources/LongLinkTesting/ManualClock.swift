import LongLinkCore
import LongLink
import LongLinkTransport

/// A ``LongLinkClock`` that moves only when a test advances it: deadlines, heartbeats, backoff and
/// ack delays fire exactly when the test says, without waiting. A server takes one too
/// (`ServerConfiguration.clock`) for its handshake, heartbeat, drain and push-window timers.
///
/// ```swift
/// let clock = ManualClock()
/// var configuration = ClientConfiguration(endpoints: [endpoint])
/// configuration.clock = clock
/// ...
/// await clock.advance(by: .seconds(10))   // every timer due by then has run on its event loop
/// ```
public final class ManualClock: LongLinkClock, LoopSchedulingClock {
    private struct Entry {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        /// The loop to run the work on; `nil` runs it on the task that advances the clock.
        let loop: EventLoop?
        let work: @Sendable () -> Void
    }

    private struct State {
        var now: ContinuousClock.Instant
        var entries: [Entry] = []
        var nextID: UInt64 = 0
    }

    private let state: Locked<State>

    /// A clock that starts at the real current instant and stands still.
    public init() {
        state = Locked(State(now: ContinuousClock.now))
    }

    /// The clock's current instant.
    public var now: ContinuousClock.Instant {
        state.withLock { $0.now }
    }

    /// How many scheduled works wait (for tests that check timers are released).
    public var scheduledCount: Int {
        state.withLock { $0.entries.count }
    }

    /// Keeps `work` until the clock passes `deadline`, then runs it on the task that advances the
    /// clock (a deadline already passed runs it in the next ``advance(by:)``).
    public func schedule(at deadline: ContinuousClock.Instant, _ work: @escaping @Sendable () -> Void)
        -> any ScheduledWork
    {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.entries.append(Entry(id: state.nextID, deadline: deadline, loop: nil, work: work))
            return state.nextID
        }
        return Scheduled(clock: self, id: id)
    }

    /// Keeps `work` until the clock passes `deadline`, then runs it on `loop`.
    package func schedule(
        at deadline: ContinuousClock.Instant, on loop: EventLoop, _ work: @escaping @Sendable () -> Void
    ) -> any ScheduledWork {
        let (id, dueNow) = state.withLock { state -> (UInt64, Bool) in
            state.nextID += 1
            if deadline <= state.now { return (state.nextID, true) }
            state.entries.append(Entry(id: state.nextID, deadline: deadline, loop: loop, work: work))
            return (state.nextID, false)
        }
        if dueNow { loop.execute(work) }
        return Scheduled(clock: self, id: id)
    }

    fileprivate func cancel(_ id: UInt64) {
        state.withLock { $0.entries.removeAll { $0.id == id } }
    }

    /// Moves the clock forward by `duration`, running every work that falls due in deadline order,
    /// and returns once their event loops have run them (and what they scheduled on the way).
    public func advance(by duration: Duration) async {
        let target = state.withLock { $0.now.advanced(by: duration) }
        while true {
            let next = state.withLock { state -> Entry? in
                guard
                    let index = state.entries.indices.min(by: {
                        state.entries[$0].deadline < state.entries[$1].deadline
                    }),
                    state.entries[index].deadline <= target
                else { return nil }
                let entry = state.entries.remove(at: index)
                state.now = max(state.now, entry.deadline)
                return entry
            }
            guard let next else { break }
            await run(next.work, on: next.loop)
        }
        state.withLock { $0.now = max($0.now, target) }
    }

    private func run(_ work: @escaping @Sendable () -> Void, on loop: EventLoop?) async {
        guard let loop else {
            work()
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                work()
                continuation.resume()
            }
        }
        // Let jobs that the work enqueued on the loop (actor jobs) run before the next deadline.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { continuation.resume() }
        }
    }

    private struct Scheduled: ScheduledWork {
        let clock: ManualClock
        let id: UInt64

        func cancel() {
            clock.cancel(id)
        }
    }
}
