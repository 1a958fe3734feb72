import LongLinkCore
import LongLinkTransport

/// A queue that tests await with a bounded wait: `next(within:)` fails instead of hanging.
/// Several tasks may wait at once; elements go to waiters in arrival order.
package final class Mailbox<Element: Sendable>: Sendable {
    package struct TimedOut: Error, CustomStringConvertible {
        package let what: String
        package var description: String { "timed out waiting for \(what)" }
    }

    private struct State {
        var items: [Element] = []
        var head = 0
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Element, any Error>)] = []
        var nextID: UInt64 = 0
        var expired: Set<UInt64> = []
    }

    private let state = Locked(State())

    package init() {}

    package func put(_ element: Element) {
        let waiter = state.withLock { state -> CheckedContinuation<Element, any Error>? in
            if !state.waiters.isEmpty { return state.waiters.removeFirst().continuation }
            state.items.append(element)
            return nil
        }
        waiter?.resume(returning: element)
    }

    package var count: Int { state.withLock { $0.items.count - $0.head } }

    package func next(within timeout: Duration = .seconds(20), _ what: String = "an element") async throws -> Element {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            let waiter = self.state.withLock { state -> CheckedContinuation<Element, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.expired.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: TimedOut(what: what))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await waitForElement(id: id, what: what)
        } onCancel: {
            let waiter = self.state.withLock { state -> CheckedContinuation<Element, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.expired.insert(id)
                    return nil
                }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    private func waitForElement(id: UInt64, what: String) async throws -> Element {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Element, any Error>? in
                if state.head < state.items.count {
                    let element = state.items[state.head]
                    state.head += 1
                    return .success(element)
                }
                if state.expired.remove(id) != nil { return .failure(TimedOut(what: what)) }
                state.waiters.append((id, continuation))
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
