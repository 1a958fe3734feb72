internal import LongLinkTransport

/// Identical requests in flight at once share one request on the wire.
///
/// The first caller of a key starts the shared request (a task of its own, with that caller's
/// deadline); later callers join it and wait for its outcome, each racing its own deadline. A
/// caller that gives up (cancelled, or its deadline passed) leaves with its own error; when the
/// last one leaves, the shared task is cancelled, which sends `Cancel`. The shared request itself
/// ends at the first caller's deadline, so a caller that joined later may see `deadlineExceeded`
/// up to the time between the two calls early.
final class Coalescer: Sendable {
    private struct Flight {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        var waiters: [UInt64: CheckedContinuation<[UInt8], any Error>] = [:]
        var task: Task<Void, Never>?
    }

    private struct State {
        var flights: [String: Flight] = [:]
        var nextID: UInt64 = 0
        /// Callers not registered yet, and those of them that left already (cancelled early).
        var unregistered: Set<UInt64> = []
        var departed: Set<UInt64> = []
        /// Shared requests started (for tests and statistics).
        var started = 0
        var joined = 0
    }

    private let state = Locked(State())

    /// Shared requests started, and callers that joined one.
    var counts: (started: Int, joined: Int) { state.withLock { ($0.started, $0.joined) } }

    /// The outcome of the shared request of `key`, started with `start` if there is none.
    func run(
        _ key: String, deadline: ContinuousClock.Instant, sleep: @escaping @Sendable () async throws -> Void,
        start: @escaping @Sendable () async throws -> [UInt8]
    ) async throws -> [UInt8] {
        let caller = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.unregistered.insert(state.nextID)
            return state.nextID
        }
        return try await withThrowingTaskGroup(of: Void.self, returning: [UInt8].self) { group in
            group.addTask {
                guard (try? await sleep()) != nil else { return }
                self.leave(key, caller, with: PendingRequest.timeoutError())
            }
            defer { group.cancelAll() }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    join(key, caller, deadline: deadline, continuation, start: start)
                }
            } onCancel: {
                self.leave(key, caller, with: CancellationError())
            }
        }
    }

    private func join(
        _ key: String, _ caller: UInt64, deadline: ContinuousClock.Instant,
        _ continuation: CheckedContinuation<[UInt8], any Error>, start: @escaping @Sendable () async throws -> [UInt8]
    ) {
        enum Joined {
            case refused
            case joined
            case started(UInt64)
        }
        let joined = state.withLock { state -> Joined in
            state.unregistered.remove(caller)
            if state.departed.remove(caller) != nil { return .refused }
            if state.flights[key] != nil {
                state.flights[key]!.waiters[caller] = continuation
                state.joined += 1
                return .joined
            }
            state.nextID += 1
            var flight = Flight(id: state.nextID, deadline: deadline)
            flight.waiters[caller] = continuation
            state.flights[key] = flight
            state.started += 1
            return .started(flight.id)
        }
        switch joined {
        case .refused:
            continuation.resume(throwing: CancellationError())
        case .joined:
            break
        case .started(let id):
            let task = Task {
                let result: Result<[UInt8], any Error>
                do { result = .success(try await start()) } catch { result = .failure(error) }
                self.finish(key, id, result)
            }
            let orphaned = state.withLock { state -> Bool in
                guard state.flights[key]?.id == id else { return true }
                state.flights[key]!.task = task
                return false
            }
            // Everyone left before the task was recorded: nobody is left to want it.
            if orphaned { task.cancel() }
        }
    }

    /// A caller gives up: it gets `error`; the shared request is cancelled when it was the last.
    private func leave(_ key: String, _ caller: UInt64, with error: any Error) {
        let (waiter, task) = state.withLock { state -> (CheckedContinuation<[UInt8], any Error>?, Task<Void, Never>?) in
            guard let waiter = state.flights[key]?.waiters.removeValue(forKey: caller) else {
                if state.unregistered.contains(caller) { state.departed.insert(caller) }
                return (nil, nil)
            }
            guard state.flights[key]!.waiters.isEmpty else { return (waiter, nil) }
            let flight = state.flights.removeValue(forKey: key)
            return (waiter, flight?.task)
        }
        waiter?.resume(throwing: error)
        task?.cancel()
    }

    private func finish(_ key: String, _ id: UInt64, _ result: Result<[UInt8], any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<[UInt8], any Error>] in
            guard state.flights[key]?.id == id else { return [] }
            return state.flights.removeValue(forKey: key).map { Array($0.waiters.values) } ?? []
        }
        for waiter in waiters { waiter.resume(with: result) }
    }
}
