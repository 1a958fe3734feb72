internal import LongLinkCore
internal import LongLinkTransport

/// One observer of connection states: a small buffer that keeps the newest states (the oldest
/// are dropped when a slow observer falls more than `limit` behind).
final class StateObserver: Sendable {
    private struct State {
        var buffer: [ConnectionState] = []
        var waiter: CheckedContinuation<ConnectionState?, Never>?
        var finished = false
    }

    let id: UInt64
    private let limit = 64
    private let state = Locked(State())

    init(id: UInt64, initial: ConnectionState) {
        self.id = id
        state.withLock { $0.buffer.append(initial) }
    }

    func offer(_ value: ConnectionState) {
        let waiter = state.withLock { state -> CheckedContinuation<ConnectionState?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if state.buffer.count >= limit { state.buffer.removeFirst() }
            state.buffer.append(value)
            return nil
        }
        waiter?.resume(returning: value)
    }

    func next() async -> ConnectionState? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ConnectionState?, Never>) in
                let ready = state.withLock { state -> ConnectionState?? in
                    if !state.buffer.isEmpty { return .some(state.buffer.removeFirst()) }
                    if state.finished { return .some(nil) }
                    state.waiter = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the sequence after the states already buffered.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<ConnectionState?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
