import Synchronization

/// Suspends until the current task is cancelled, with no timer: the body of the bench server's
/// `never` handler.
///
/// Why not `Task.sleep` for a day: a cancelled sleep leaves the runtime's timer behind until it is
/// due, and cancelling 100,000 of them at once (`longlink-bench timeouts`) made the server in the
/// same process spend most of a core in the runtime while the client's deadlines fired.
func suspendUntilCancelled() async {
    let wait = CancellationWait()
    await withTaskCancellationHandler {
        await withUnsafeContinuation { wait.park($0) }
    } onCancel: {
        wait.cancel()
    }
}

/// The continuation of one ``suspendUntilCancelled()``, resumed exactly once: by the cancellation,
/// or at once when the task was already cancelled before it parked.
private final class CancellationWait: Sendable {
    private struct State {
        var continuation: UnsafeContinuation<Void, Never>?
        var cancelled = false
    }

    private let state = Mutex(State())

    func park(_ continuation: UnsafeContinuation<Void, Never>) {
        let cancelled = state.withLock { state in
            if !state.cancelled { state.continuation = continuation }
            return state.cancelled
        }
        if cancelled { continuation.resume() }
    }

    func cancel() {
        let continuation = state.withLock { state in
            state.cancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }
}
