/// A value delivered exactly once, from any thread, to one waiting task.
///
/// `resume` may come before or after `value()` starts waiting; only the first `resume` counts (it returns
/// true), later ones are ignored. This is what lets a cancellation handler, a timer and the event loop race to
/// finish one operation without ever resuming a continuation twice.
package final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, Never>)
        case ready(Value)
        case consumed
    }

    private let state = Locked<State>(.empty)

    package init() {}

    /// True once a value was delivered (whether or not it was consumed yet).
    package var isResolved: Bool {
        state.withLock { state in
            switch state {
            case .empty, .waiting: false
            case .ready, .consumed: true
            }
        }
    }

    /// Delivers `value`; returns false (and drops it) when a value was already delivered.
    @discardableResult
    package func resume(_ value: Value) -> Bool {
        let (accepted, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Value, Never>?) in
            switch state {
            case .empty:
                state = .ready(value)
                return (true, nil)
            case .waiting(let continuation):
                state = .consumed
                return (true, continuation)
            case .ready, .consumed:
                return (false, nil)
            }
        }
        continuation?.resume(returning: value)
        return accepted
    }

    /// Waits for the value. Call at most once.
    package func value() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let ready = state.withLock { state -> Value? in
                switch state {
                case .empty:
                    state = .waiting(continuation)
                    return nil
                case .ready(let value):
                    state = .consumed
                    return value
                case .waiting, .consumed:
                    preconditionFailure("OneShot.value() called twice")
                }
            }
            if let ready {
                continuation.resume(returning: ready)
            }
        }
    }
}
