import LongLinkTransport
import Testing

/// A bounded wait that ran out.
struct WaitTimedOut: Error, CustomStringConvertible {
    var what: String
    var limit: Duration
    var description: String { "timed out after \(limit) waiting for \(what)" }
}

/// A value other threads change, with a bounded wait for a condition on it: the wait fails after `within`
/// instead of hanging.
final class Watched<Value: Sendable>: Sendable {
    private struct Waiter {
        var id: Int
        var predicate: @Sendable (Value) -> Bool
        var continuation: CheckedContinuation<Value?, Never>
    }

    private struct Inner {
        var value: Value
        var waiters: [Waiter] = []
        var nextID = 0
        /// Waits whose timer fired before they were registered.
        var expired: Set<Int> = []
    }

    private let inner: Locked<Inner>

    init(_ value: Value) {
        inner = Locked(Inner(value: value))
    }

    var value: Value {
        inner.withLock { $0.value }
    }

    func update(_ body: (inout Value) -> Void) {
        let (ready, value) = inner.withLock { inner -> ([Waiter], Value) in
            body(&inner.value)
            let value = inner.value
            var ready: [Waiter] = []
            inner.waiters.removeAll { waiter in
                guard waiter.predicate(value) else {
                    return false
                }
                ready.append(waiter)
                return true
            }
            return (ready, value)
        }
        for waiter in ready {
            waiter.continuation.resume(returning: value)
        }
    }

    /// Waits until `predicate` holds and returns the value then; throws ``WaitTimedOut`` after `limit`.
    @discardableResult
    func wait(
        _ what: String, within limit: Duration = .seconds(20), until predicate: @escaping @Sendable (Value) -> Bool
    ) async throws -> Value {
        let id = inner.withLock { inner -> Int in
            inner.nextID += 1
            return inner.nextID
        }
        let timer = Task {
            try? await Task.sleep(for: limit)
            let waiter = self.inner.withLock { inner -> Waiter? in
                if let index = inner.waiters.firstIndex(where: { $0.id == id }) {
                    return inner.waiters.remove(at: index)
                }
                inner.expired.insert(id)
                return nil
            }
            waiter?.continuation.resume(returning: nil)
        }
        defer { timer.cancel() }
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
            let now = inner.withLock { inner -> Value?? in
                if inner.expired.remove(id) != nil {
                    return .some(nil)
                }
                if predicate(inner.value) {
                    return .some(inner.value)
                }
                inner.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                return .none
            }
            if let now {
                continuation.resume(returning: now)
            }
        }
        guard let result else {
            throw WaitTimedOut(what: what, limit: limit)
        }
        return result
    }
}

/// Runs `operation`, failing with ``WaitTimedOut`` (and cancelling it) when it takes longer than `limit`.
func withTimeout<T: Sendable>(
    _ what: String, _ limit: Duration = .seconds(10), _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw WaitTimedOut(what: what, limit: limit)
        }
        return value
    }
}

/// Re-checks a condition that nothing can be awaited for (a counter another thread updates) until it holds;
/// throws ``WaitTimedOut`` after `limit`.
func eventually(
    _ what: String, within limit: Duration = .seconds(20), _ condition: @Sendable () -> Bool
) async throws {
    let deadline = ContinuousClock.now + limit
    while !condition() {
        guard ContinuousClock.now < deadline else {
            throw WaitTimedOut(what: what, limit: limit)
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}
