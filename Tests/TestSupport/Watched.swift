import LongLinkCore
import LongLinkTransport

/// A value that other threads change, with a bounded wait for a condition on it: the wait fails
/// with ``ConditionTimedOut`` after its limit instead of hanging.
package final class Watched<Value: Sendable>: Sendable {
    private struct Waiter: Sendable {
        var id: Int
        var predicate: @Sendable (Value) -> Bool
        var continuation: CheckedContinuation<Value?, Never>
    }

    private struct Inner: Sendable {
        var value: Value
        var waiters: [Waiter] = []
        var nextID = 0
        /// Waits cancelled before they were registered.
        var cancelled: Set<Int> = []
    }

    private let inner: Locked<Inner>

    package init(_ value: Value) {
        inner = Locked(Inner(value: value))
    }

    package var value: Value {
        inner.withLock { $0.value }
    }

    /// Changes the value and wakes the waits whose condition now holds.
    package func update(_ body: (inout Value) -> Void) {
        let ready = inner.withLock { inner -> [(CheckedContinuation<Value?, Never>, Value)] in
            body(&inner.value)
            var ready: [(CheckedContinuation<Value?, Never>, Value)] = []
            inner.waiters.removeAll { waiter in
                guard waiter.predicate(inner.value) else { return false }
                ready.append((waiter.continuation, inner.value))
                return true
            }
            return ready
        }
        for (continuation, value) in ready {
            continuation.resume(returning: value)
        }
    }

    /// Waits until `predicate` holds and returns the value then; throws ``ConditionTimedOut`` after
    /// `limit`.
    @discardableResult
    package func wait(
        _ what: String, within limit: Duration = .seconds(20), until predicate: @escaping @Sendable (Value) -> Bool
    ) async throws -> Value {
        try await within(limit, what) {
            guard let value = await self.waitUnbounded(predicate) else { throw CancellationError() }
            return value
        }
    }

    private func waitUnbounded(_ predicate: @escaping @Sendable (Value) -> Bool) async -> Value? {
        let id = inner.withLock { inner -> Int in
            inner.nextID += 1
            return inner.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let immediate = inner.withLock { inner -> Value?? in
                    if inner.cancelled.remove(id) != nil { return .some(nil) }
                    if predicate(inner.value) { return .some(inner.value) }
                    inner.waiters.append(Waiter(id: id, predicate: predicate, continuation: continuation))
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let continuation = inner.withLock { inner -> CheckedContinuation<Value?, Never>? in
                if let index = inner.waiters.firstIndex(where: { $0.id == id }) {
                    return inner.waiters.remove(at: index).continuation
                }
                inner.cancelled.insert(id)
                return nil
            }
            continuation?.resume(returning: nil)
        }
    }
}
