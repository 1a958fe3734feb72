internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire

/// One consumer's buffer of pushes, between the core (which offers pushes on the event loop) and
/// the `AsyncStream` that hands them to the app (on any task, from any number of loops).
///
/// A reliable push counts as taken when ``next()`` returns it: its key goes to `taken`, and the
/// core is told (once per batch) so that it acknowledges what was taken. A consumer that
/// acknowledges after processing (``unacknowledgedLimit`` set) keeps it in `unacked` instead, until
/// the app calls ``acknowledge(_:)``; until then it is the consumer's as if still buffered.
///
/// Several tasks may wait in ``next()`` at once (two `for await` loops over one stream): each
/// waits its turn in `waiters`, and each push goes to exactly one of them.
final class PushSubscriber: Sendable {
    private struct State {
        var buffer: [Push] = []
        /// The payload bytes of the untaken pushes in `buffer`.
        var bytes = 0
        var head = 0
        /// The absolute position of `buffer[0]` (positions count every push ever buffered).
        var base = 0
        /// Conflation: the position of the one untaken best-effort push of each key, and back.
        var latest: [String: Int] = [:]
        var keyAt: [Int: String] = [:]
        var waiters: [Waiter] = []
        /// A burst is being buffered for the waiting tasks, woken once it is complete by
        /// ``wakeWaiters()``: its pushes were not registered for conflation (a consumer that waits
        /// keeps up, and reads them all).
        var wakePending = false
        var finished = false
        /// Why the stream ended, when the client ended it (shut down, login rejected, kicked); nil
        /// while it runs and when its own consumer went away.
        var endReason: LongLinkError?
        var taken: [PushKey] = []
        var takenReported = false
        /// Reliable pushes handed over and not yet acknowledged by the app (after processing).
        var unacked: [PushKey: Push] = [:]
        /// The payload bytes of `unacked`.
        var unackedBytes = 0
    }

    /// A task waiting in ``next(recording:)``; `records` when the push counts as taken on hand-over.
    private struct Waiter {
        let continuation: CheckedContinuation<Push?, Never>
        let records: Bool
    }

    let id: UInt64
    let filter: TopicFilter
    let limit: Int
    /// Set when the app acknowledges each push after processing it: the most reliable pushes
    /// buffered and handed over unacknowledged together. Nil: a push is taken at hand-over.
    let unacknowledgedLimit: Int?
    /// The most payload bytes buffered; a push always fits an empty buffer.
    let byteLimit: Int
    /// With ``unacknowledgedLimit``: the most payload bytes of reliable pushes buffered and handed
    /// over unacknowledged together; a push always fits when none is held.
    let unacknowledgedByteLimit: Int
    /// The conflation key of a best-effort push (nil: not conflated), or nil for no conflation.
    private let conflationKey: (@Sendable (Push) -> String?)?
    // A pthread mutex (`Locked`), not `Synchronization.Mutex`: ThreadSanitizer does not see the
    // latter's futex on Linux and reports every access it guards.
    private let state = Locked(State())
    /// Called (outside the lock) when the first seq of a batch was taken.
    private let onTaken: @Sendable (PushSubscriber) -> Void

    init(
        id: UInt64, filter: TopicFilter, limit: Int, byteLimit: Int = .max, unacknowledgedLimit: Int? = nil,
        unacknowledgedByteLimit: Int = .max, conflationKey: (@Sendable (Push) -> String?)? = nil,
        onTaken: @escaping @Sendable (PushSubscriber) -> Void
    ) {
        self.id = id
        self.filter = filter
        self.limit = limit
        self.unacknowledgedLimit = unacknowledgedLimit
        self.unacknowledgedByteLimit = unacknowledgedByteLimit
        self.byteLimit = byteLimit
        self.conflationKey = conflationKey
        self.onTaken = onTaken
    }

    /// How many pushes wait in the buffer.
    var count: Int { state.withLock { $0.buffer.count - $0.head } }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// How many tasks wait in ``next(recording:)``.
    var waitingCount: Int { state.withLock { $0.waiters.count } }

    /// Below half of both bounds: a consumer that fell behind has caught up.
    var isBelowHalf: Bool {
        state.withLock { state in
            let untaken = state.buffer.count - state.head
            guard untaken < limit / 2, state.bytes < byteLimit / 2 else { return false }
            guard let unacknowledgedLimit else { return true }
            return (untaken + state.unacked.count) * 2 <= unacknowledgedLimit
                && state.bytes + state.unackedBytes < unacknowledgedByteLimit / 2
        }
    }

    /// How many pushes were handed over and wait for the app's acknowledgement.
    var unacknowledgedCount: Int { state.withLock { $0.unacked.count } }

    /// Why the client ended the stream; nil while it runs, and when it ended because its consumer
    /// was cancelled or released.
    var endReason: LongLinkError? { state.withLock { $0.endReason } }

    private enum Handover {
        case handed(CheckedContinuation<Push?, Never>, notify: Bool)
        /// Buffered for the waiting tasks: the first push of a burst.
        case wakeLater
        case offered(Offered)
    }

    /// How an offer went.
    enum Offered: Equatable {
        /// Handed to a waiting task or buffered.
        case accepted
        /// Put in the place of an older best-effort push of the same conflation key, which is gone.
        case conflated
        /// The buffer is full, or the consumer is gone.
        case refused
    }

    /// Offers a push: refused when ``limit`` pushes or ``byteLimit`` payload bytes wait untaken. A
    /// best-effort push with a conflation key takes the place of the untaken one
    /// of the same key, so the consumer reads the latest of each key, in the order the keys first
    /// arrived; reliable pushes are never conflated.
    func offer(_ push: Push) -> Offered {
        offer(push, wakeLater: false).offered
    }

    /// ``offer(_:)`` for a push of a burst (the frames of one read): when tasks wait, the push is
    /// buffered for them unconflated, and `wake` is true for the first push of the burst, after
    /// which the caller must call ``wakeWaiters()`` once the burst is offered. The waiting tasks
    /// wake once per burst, not once per push.
    func offer(_ push: Push, wakeLater: Bool) -> (offered: Offered, wake: Bool) {
        let key = push.isReliable ? nil : conflationKey?(push)
        let outcome = state.withLock { state -> Handover in
            guard !state.finished else { return .offered(.refused) }
            if let unacknowledgedLimit, push.isReliable {
                let held = state.buffer.count - state.head + state.unacked.count
                // Count and bytes together, buffered and in the app's hands; one always fits alone.
                if held >= unacknowledgedLimit
                    || (held > 0 && push.payload.count > unacknowledgedByteLimit - state.bytes - state.unackedBytes)
                {
                    return .offered(.refused)
                }
            }
            if !state.waiters.isEmpty {
                if wakeLater {
                    guard Self.fits(push, in: state, limit: limit, byteLimit: byteLimit) else {
                        return .offered(.refused)
                    }
                    Self.append(push, in: &state)
                    let first = !state.wakePending
                    state.wakePending = true
                    return first ? .wakeLater : .offered(.accepted)
                }
                let waiter = state.waiters.removeFirst()
                let notify = waiter.records && handedOver(push, in: &state)
                return .handed(waiter.continuation, notify: notify)
            }
            if let key, let position = state.latest[key] {
                state.bytes += push.payload.count - state.buffer[position - state.base].payload.count
                state.buffer[position - state.base] = push
                return .offered(.conflated)
            }
            guard Self.fits(push, in: state, limit: limit, byteLimit: byteLimit) else { return .offered(.refused) }
            Self.append(push, in: &state)
            if let key {
                let position = state.base + state.buffer.count - 1
                state.latest[key] = position
                state.keyAt[position] = key
            }
            return .offered(.accepted)
        }
        switch outcome {
        case .handed(let waiter, let notify):
            waiter.resume(returning: push)
            if notify { onTaken(self) }
            return (.accepted, false)
        case .wakeLater:
            return (.accepted, true)
        case .offered(let offered):
            return (offered, false)
        }
    }

    private static func fits(_ push: Push, in state: State, limit: Int, byteLimit: Int) -> Bool {
        let untaken = state.buffer.count - state.head
        return untaken < limit && (untaken == 0 || push.payload.count <= byteLimit - state.bytes)
    }

    private static func append(_ push: Push, in state: inout State) {
        state.buffer.append(push)
        state.bytes += push.payload.count
    }

    /// Hands the pushes buffered by ``offer(_:wakeLater:)`` to the tasks that wait, one each, and
    /// resumes them (outside the lock); the rest stay buffered for their next call.
    func wakeWaiters() {
        var notify = false
        let handed = state.withLock { state -> [(CheckedContinuation<Push?, Never>, Push)] in
            state.wakePending = false
            var handed: [(CheckedContinuation<Push?, Never>, Push)] = []
            while !state.waiters.isEmpty, state.head < state.buffer.count {
                let waiter = state.waiters.removeFirst()
                let push = Self.pop(&state)
                if waiter.records, handedOver(push, in: &state) { notify = true }
                handed.append((waiter.continuation, push))
            }
            return handed
        }
        for (waiter, push) in handed { waiter.resume(returning: push) }
        if notify { onTaken(self) }
    }

    /// The next push, or nil once the subscriber is finished. With `recording` false the push does
    /// not count as taken until ``recordTaken(_:)`` says so (a typed stream decodes it first).
    ///
    /// Cancellation is the stream's: `AsyncStream(unfolding:onCancel:)` calls ``cancelWaiters()``
    /// through its `onCancel`, which resumes every waiter with nil.
    func next(recording: Bool = true) async -> Push? {
        if let ready = takeBuffered(recording: recording) { return ready }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Push?, Never>) in
            var notify = false
            let ready = state.withLock { state -> Push?? in
                if state.finished { return .some(nil) }
                if state.head < state.buffer.count {
                    let push = Self.pop(&state)
                    notify = recording && handedOver(push, in: &state)
                    return .some(push)
                }
                state.waiters.append(Waiter(continuation: continuation, records: recording))
                return .none
            }
            if let ready {
                continuation.resume(returning: ready)
                if notify { onTaken(self) }
            }
        }
    }

    private func takeBuffered(recording: Bool) -> Push? {
        var notify = false
        let push = state.withLock { state -> Push? in
            guard !state.finished, state.head < state.buffer.count else { return nil }
            let push = Self.pop(&state)
            notify = recording && handedOver(push, in: &state)
            return push
        }
        if notify { onTaken(self) }
        return push
    }

    /// A push ``next(recording:)`` returned unrecorded was handed to the app: it counts as taken
    /// now. Also after the subscriber finished: the core still acknowledges it.
    func recordTaken(_ push: Push) {
        let notify = state.withLock { Self.recordTaken(push, in: &$0) }
        if notify { onTaken(self) }
    }

    private static func pop(_ state: inout State) -> Push {
        let push = state.buffer[state.head]
        state.bytes -= push.payload.count
        if !state.keyAt.isEmpty, let key = state.keyAt.removeValue(forKey: state.base + state.head) {
            state.latest[key] = nil
        }
        state.head += 1
        if state.head == state.buffer.count {
            state.base += state.buffer.count
            state.buffer.removeAll(keepingCapacity: true)
            state.head = 0
        } else if state.head >= 1024, state.head * 2 >= state.buffer.count {
            state.base += state.head
            state.buffer.removeFirst(state.head)
            state.head = 0
        }
        return push
    }

    /// The app acknowledged `key`, handed over after processing: it counts as taken now. Harmless
    /// when it was acknowledged before or the stream has ended (the push went back to the server).
    func acknowledge(_ key: PushKey) {
        let notify = state.withLock { state -> Bool in
            guard let push = state.unacked.removeValue(forKey: key) else { return false }
            state.unackedBytes -= push.payload.count
            return Self.recordTaken(push, in: &state)
        }
        if notify { onTaken(self) }
    }

    /// A push handed over unacknowledged will never be acknowledged (a typed stream let it go):
    /// false when it is not held (the stream ended, and gave it back already).
    func forget(_ key: PushKey) -> Bool {
        state.withLock { state in
            guard let push = state.unacked.removeValue(forKey: key) else { return false }
            state.unackedBytes -= push.payload.count
            return true
        }
    }

    /// Records a push handed over: taken, or held until the app acknowledges it; true when the core
    /// must be told.
    private func handedOver(_ push: Push, in state: inout State) -> Bool {
        guard unacknowledgedLimit != nil, push.isReliable else { return Self.recordTaken(push, in: &state) }
        state.unacked[push.key] = push
        state.unackedBytes += push.payload.count
        return false
    }

    /// Records a reliable push as taken; true when the core must be told (first of a batch).
    private static func recordTaken(_ push: Push, in state: inout State) -> Bool {
        guard push.isReliable else { return false }
        state.taken.append(push.key)
        guard !state.takenReported else { return false }
        state.takenReported = true
        return true
    }

    /// The pushes taken since the last call (the core acknowledges them).
    func drainTaken() -> [PushKey] {
        state.withLock { state in
            state.takenReported = false
            defer { state.taken.removeAll(keepingCapacity: true) }
            return state.taken
        }
    }

    /// The consuming task was cancelled: every waiting task gets nil now, and the buffer stays
    /// for the core, which takes what was never taken back with ``finish()``.
    func cancelWaiters() {
        let waiters = state.withLock { state -> [Waiter] in
            state.finished = true
            state.wakePending = false
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    /// Ends the stream: every waiting task gets nil, and `reason` (when the client ends it for one)
    /// is kept unless the stream had already ended. Returns the reliable pushes never taken (once),
    /// those handed over and not acknowledged with them.
    @discardableResult
    func finish(reason: LongLinkError? = nil) -> [Push] {
        let (waiters, untaken) = state.withLock { state -> ([Waiter], [Push]) in
            let untaken = state.buffer[state.head...].filter(\.isReliable) + state.unacked.values
            state.unacked.removeAll()
            state.unackedBytes = 0
            if !state.finished { state.endReason = reason }
            state.finished = true
            state.buffer.removeAll()
            state.bytes = 0
            state.head = 0
            state.latest.removeAll()
            state.keyAt.removeAll()
            state.wakePending = false
            defer { state.waiters.removeAll() }
            return (state.waiters, untaken)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        return untaken
    }
}
