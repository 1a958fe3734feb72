import LongLinkCore

/// A value delivered exactly once, from any thread, to one waiting task.
///
/// `resume` may come before or after `value()` starts waiting; only the first `resume` counts (it returns
/// true), later ones are ignored. This is what lets a cancellation handler, a timer and the event loop race to
/// finish one operation without ever resuming a continuation twice.
///
/// The value itself travels under the lock, not through the continuation: the waiter takes it under the lock
/// after it wakes. The lock then orders everything the resuming thread wrote before `resume` ahead of the
/// waiter's reads, on every path; when a resume lands between `withCheckedContinuation`'s body and the task's
/// suspension, the runtime hands the task on without telling ThreadSanitizer of that order.
package final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Void, Never>)
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
        let (accepted, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            switch state {
            case .empty:
                state = .ready(value)
                return (true, nil)
            case .waiting(let continuation):
                state = .ready(value)
                return (true, continuation)
            case .ready, .consumed:
                return (false, nil)
            }
        }
        waiter?.resume()
        return accepted
    }

    /// Waits for the value. Call at most once.
    package func value() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                switch state {
                case .empty:
                    state = .waiting(continuation)
                    return false
                case .ready:
                    return true
                case .waiting, .consumed:
                    preconditionFailure("OneShot.value() called twice")
                }
            }
            if ready {
                continuation.resume()
            }
        }
        return state.withLock { state in
            guard case .ready(let value) = state else {
                preconditionFailure("OneShot woke without a value")
            }
            state = .consumed
            return value
        }
    }
}
