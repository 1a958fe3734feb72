internal import LongLinkWire
import Synchronization

/// A result delivered once, from any thread, to one waiting task: the loop's reply, a timer and a
/// cancellation race to finish a command, and only the first counts.
final class ReplyPromise<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Result<Value, LongLinkError>, Never>)
        case ready(Result<Value, LongLinkError>)
        case done
    }

    private let state = Mutex(State.empty)

    /// Delivers `result`; false when a result was delivered before.
    @discardableResult
    func resume(_ result: Result<Value, LongLinkError>) -> Bool {
        let (accepted, continuation) = state.withLock {
            state -> (Bool, CheckedContinuation<Result<Value, LongLinkError>, Never>?) in
            switch state {
            case .empty:
                state = .ready(result)
                return (true, nil)
            case .waiting(let continuation):
                state = .done
                return (true, continuation)
            case .ready, .done:
                return (false, nil)
            }
        }
        // Outside the lock: the resumed task may run at once on this thread.
        continuation?.resume(returning: result)
        return accepted
    }

    /// Waits for the result (one caller only).
    func value() async -> Result<Value, LongLinkError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<Value, LongLinkError>? in
                if case .ready(let result) = state {
                    state = .done
                    return result
                }
                state = .waiting(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
