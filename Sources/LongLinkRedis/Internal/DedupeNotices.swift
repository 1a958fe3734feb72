internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire

/// The notices of finished and abandoned de-dup entries, for the callers of
/// ``RedisDedupeStore/awaitOutcome(_:)``: one pub/sub
/// connection, opened on first use, subscribed to the channel of every entry someone waits for and
/// to no other.
final class DedupeNotices: Sendable {
    private struct State {
        /// By the channel's bytes: the channels of two spellings of one principal are two.
        var waiters: [PrincipalKey: [ObjectIdentifier: NoticeWaiter]] = [:]
        var subscriber: (any RedisNoticeSubscriber)?
        var isShutDown = false
    }

    private let state = Locked(State())
    private let backend: RedisBackend

    init(backend: RedisBackend) {
        self.backend = backend
    }

    /// Adds `waiter` to `channel`'s and returns once the subscription is confirmed (or the
    /// connection is down: its reconnection wakes every waiter). Throws `shutdown` after ``shutdown()``.
    func join(_ channel: String, _ waiter: NoticeWaiter) async throws(LongLinkError) -> any RedisNoticeSubscriber {
        let joined = state.withLock { state -> (subscriber: any RedisNoticeSubscriber, created: Bool)? in
            guard !state.isShutDown else { return nil }
            state.waiters[PrincipalKey(channel), default: [:]][ObjectIdentifier(waiter)] = waiter
            if let subscriber = state.subscriber { return (subscriber, false) }
            let subscriber = backend.subscriber { [weak self] event in self?.deliver(event) }
            state.subscriber = subscriber
            return (subscriber, true)
        }
        guard let joined else {
            throw LongLinkError(code: .shutdown, message: "the Redis de-dup store was shut down")
        }
        if joined.created { await joined.subscriber.start() }
        await joined.subscriber.update(channel) { [weak self] in self?.hasWaiters(channel) ?? false }
        return joined.subscriber
    }

    /// Removes `waiter`, and unsubscribes from `channel` when nobody else waits on it.
    func leave(_ channel: String, _ waiter: NoticeWaiter, from subscriber: any RedisNoticeSubscriber) async {
        state.withLock { state in
            let channel = PrincipalKey(channel)
            state.waiters[channel]?[ObjectIdentifier(waiter)] = nil
            if state.waiters[channel]?.isEmpty == true { state.waiters[channel] = nil }
        }
        await subscriber.update(channel) { [weak self] in self?.hasWaiters(channel) ?? false }
    }

    /// Wakes every waiter and closes the connection; later ``join(_:_:)``s throw.
    func shutdown() async {
        let (subscriber, waiters) = state.withLock { state in
            state.isShutDown = true
            return (state.subscriber, state.waiters.values.flatMap(\.values))
        }
        for waiter in waiters { waiter.notify() }
        await subscriber?.shutdown()
    }

    /// How many callers wait on `channel` (for tests).
    func waiterCount(_ channel: String) -> Int {
        state.withLock { $0.waiters[PrincipalKey(channel)]?.count ?? 0 }
    }

    private func hasWaiters(_ channel: String) -> Bool {
        state.withLock { $0.waiters[PrincipalKey(channel)] != nil }
    }

    /// On the loop: a notice wakes its channel's waiters; a (re)connection wakes all, since
    /// notices may have been lost while it was down.
    private func deliver(_ event: RedisSubscriber.Event) {
        let waiters = state.withLock { state -> [NoticeWaiter] in
            switch event {
            case .message(let channel, _): Array(state.waiters[PrincipalKey(channel)]?.values ?? [:].values)
            case .subscribed: state.waiters.values.flatMap(\.values)
            case .disconnected, .unsubscribed: []
            }
        }
        for waiter in waiters { waiter.notify() }
    }
}

/// One caller's wake-ups: a notice that comes while the caller is not waiting is kept for its next
/// wait, so that none falls between a check and the wait after it.
final class NoticeWaiter: Sendable {
    private struct State {
        var notified = false
        var current: OneShot<Void>?
    }

    private let state = Locked(State())

    /// Ends the current wait, or the next one at once.
    func notify() {
        let current = state.withLock { state -> OneShot<Void>? in
            guard let current = state.current else {
                state.notified = true
                return nil
            }
            state.current = nil
            return current
        }
        current?.resume(())
    }

    /// Waits until a notice, `wake`, or the task's cancellation, whichever comes first.
    func next(until wake: ContinuousClock.Instant) async {
        let shot = OneShot<Void>()
        let notified = state.withLock { state in
            if state.notified {
                state.notified = false
                return true
            }
            state.current = shot
            return false
        }
        guard !notified else { return }
        await withTaskGroup(of: Void.self) { group in
            // The sleep ends at `wake` or, with the task cancelled, at once: either way the
            // OneShot is resumed, so the wait below always ends (only the first resume counts).
            group.addTask {
                try? await Task.sleep(until: wake, clock: .continuous)
                shot.resume(())
            }
            await shot.value()
            group.cancelAll()
        }
        state.withLock { state in
            if state.current === shot { state.current = nil }
        }
    }
}
