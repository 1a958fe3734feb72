internal import LongLinkCore
internal import LongLinkTransport

/// Identical requests in flight at once share one request on the wire.
///
/// The first caller of a key starts the shared request (a task of its own, with that caller's
/// deadline); later callers join it and wait for its outcome, each racing its own deadline. A
/// caller that gives up (cancelled, or its deadline passed) leaves with its own error; when the
/// last one leaves, the shared task is cancelled, which sends `Cancel`. The shared request itself
/// ends at the first caller's deadline, so a caller that joined later may see `deadlineExceeded`
/// up to the time between the two calls early.
///
/// Bounded: at most `callLimit` callers wait on shared requests in all, and the shared requests
/// hold at most `byteLimit` bytes of keys and payloads (one always fits when none is in flight);
/// a call past either bound fails at once with `resourceExhausted`, and no waiting caller is
/// touched to make room. A session's end fails every flight (``endAll(with:)``).
final class Coalescer: Sendable {
    private struct Flight {
        let id: UInt64
        let deadline: ContinuousClock.Instant
        /// The key and payload bytes it holds.
        let bytes: Int
        var waiters: [UInt64: CheckedContinuation<[UInt8], any Error>] = [:]
        var task: Task<Void, Never>?
    }

    private struct State {
        var flights: [String: Flight] = [:]
        var nextID: UInt64 = 0
        /// Callers not registered yet, and those of them that left already (cancelled early).
        var unregistered: Set<UInt64> = []
        var departed: Set<UInt64> = []
        /// Callers waiting on a flight, in all.
        var callers = 0
        /// The bytes of the flights.
        var bytes = 0
        /// Shared requests started (for tests and statistics).
        var started = 0
        var joined = 0

        /// Takes the flight of `key` off the books.
        mutating func removeFlight(_ key: String) -> Flight? {
            guard let flight = flights.removeValue(forKey: key) else { return nil }
            callers -= flight.waiters.count
            bytes -= flight.bytes
            return flight
        }
    }

    private let state = Locked(State())
    /// The most callers waiting on shared requests at once.
    let callLimit: Int
    /// The most key and payload bytes the shared requests hold.
    let byteLimit: Int

    init(callLimit: Int = .max, byteLimit: Int = .max) {
        self.callLimit = callLimit
        self.byteLimit = byteLimit
    }

    /// Shared requests started, and callers that joined one.
    var counts: (started: Int, joined: Int) { state.withLock { ($0.started, $0.joined) } }

    /// Callers waiting now, and the bytes the shared requests hold.
    var usage: (callers: Int, bytes: Int, flights: Int) {
        state.withLock { ($0.callers, $0.bytes, $0.flights.count) }
    }

    /// The outcome of the shared request of `key`, started with `start` if there is none;
    /// `payloadBytes` is the size of its payload.
    func run(
        _ key: String, payloadBytes: Int = 0, deadline: ContinuousClock.Instant,
        sleep: @escaping @Sendable () async throws -> Void, start: @escaping @Sendable () async throws -> [UInt8]
    ) async throws -> [UInt8] {
        let caller = state.withLock { state -> UInt64 in
            state.nextID += 1
            state.unregistered.insert(state.nextID)
            return state.nextID
        }
        let bytes = key.utf8.count + payloadBytes
        return try await withThrowingTaskGroup(of: Void.self, returning: [UInt8].self) { group in
            group.addTask {
                guard (try? await sleep()) != nil else { return }
                self.leave(key, caller, with: PendingRequest.timeoutError())
            }
            defer { group.cancelAll() }
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    join(key, caller, bytes: bytes, deadline: deadline, continuation, start: start)
                }
            } onCancel: {
                self.leave(key, caller, with: CancellationError())
            }
        }
    }

    private func join(
        _ key: String, _ caller: UInt64, bytes: Int, deadline: ContinuousClock.Instant,
        _ continuation: CheckedContinuation<[UInt8], any Error>, start: @escaping @Sendable () async throws -> [UInt8]
    ) {
        enum Joined {
            case refused(any Error)
            case joined
            case started(UInt64)
        }
        let joined = state.withLock { state -> Joined in
            state.unregistered.remove(caller)
            if state.departed.remove(caller) != nil { return .refused(CancellationError()) }
            guard state.callers < callLimit else {
                return .refused(
                    LongLinkError(
                        code: .resourceExhausted,
                        message: "\(state.callers) calls wait on shared requests, at most \(callLimit)"))
            }
            if state.flights[key] != nil {
                state.flights[key]!.waiters[caller] = continuation
                state.callers += 1
                state.joined += 1
                return .joined
            }
            guard state.flights.isEmpty || bytes <= byteLimit - state.bytes else {
                return .refused(
                    LongLinkError(
                        code: .resourceExhausted,
                        message: "shared requests hold \(state.bytes) bytes, at most \(byteLimit)"))
            }
            state.nextID += 1
            var flight = Flight(id: state.nextID, deadline: deadline, bytes: bytes)
            flight.waiters[caller] = continuation
            state.flights[key] = flight
            state.callers += 1
            state.bytes += bytes
            state.started += 1
            return .started(flight.id)
        }
        switch joined {
        case .refused(let error):
            continuation.resume(throwing: error)
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
            state.callers -= 1
            guard state.flights[key]!.waiters.isEmpty else { return (waiter, nil) }
            return (waiter, state.removeFlight(key)?.task)
        }
        waiter?.resume(throwing: error)
        task?.cancel()
    }

    private func finish(_ key: String, _ id: UInt64, _ result: Result<[UInt8], any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<[UInt8], any Error>] in
            guard state.flights[key]?.id == id else { return [] }
            return state.removeFlight(key).map { Array($0.waiters.values) } ?? []
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// The session ended: every caller waiting on a shared request gets `error` now, and the
    /// shared requests are cancelled. Calls made from now on start flights of their own.
    func endAll(with error: any Error) {
        let flights = state.withLock { state -> [Flight] in
            let flights = Array(state.flights.values)
            state.flights.removeAll()
            state.callers = 0
            state.bytes = 0
            return flights
        }
        for flight in flights {
            for waiter in flight.waiters.values { waiter.resume(throwing: error) }
            flight.task?.cancel()
        }
    }
}
