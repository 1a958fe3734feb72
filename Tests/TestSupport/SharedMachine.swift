import LongLinkCore
import Foundation
import LongLinkTransport
import Testing

/// A trait for test suites (every top-level suite of the test targets but the API-surface ones,
/// which import LongLink alone): at most ``SharedMachine/width`` of their tests run at once across
/// the whole test run.
///
/// Swift Testing starts every test at once by default. Hundreds of end-to-end tests then share two
/// cores, and a test's own bounds (a request's timeout, a failover's budget) measure the crowd rather
/// than the code. Each test keeps its own bounds; this trait only keeps the crowd to what one machine
/// serves, so those bounds mean what they say under `swift test` as users run it. Waiting for a turn
/// happens before the test's body starts, so no bound the test measures includes it; a suite's
/// `.timeLimit` does (Swift Testing times the whole test case), so those limits are set in terms of
/// the whole run.
package struct SharedMachine: SuiteTrait, TestTrait, TestScoping {
    /// How many such tests run at once: six per core (twelve on the 2-core machine the suite's
    /// bounds were tuned on), or `LONGLINK_TEST_WIDTH` when set.
    package static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["LONGLINK_TEST_WIDTH"], let width = Int(text), width > 0 {
            return width
        }
        return 6 * max(1, ProcessInfo.processInfo.activeProcessorCount)
    }()

    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // The suite's own scope takes no turn: only its test cases do.
        guard testCase != nil else { return try await function() }
        await Turns.shared.take()
        defer { Turns.shared.give() }
        try await function()
    }
}

extension Trait where Self == SharedMachine {
    /// This suite's tests take turns with the other end-to-end tests (see ``SharedMachine``).
    package static var sharedMachine: SharedMachine { SharedMachine() }
}

/// A counting semaphore for tasks: first come, first served.
private final class Turns: Sendable {
    static let shared = Turns(SharedMachine.width)

    private struct State {
        var free: Int
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    // LongLink's own lock (pthread), which ThreadSanitizer understands.
    private let state: Locked<State>

    init(_ width: Int) {
        state = Locked(State(free: width))
    }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func give() {
        // The turn passes straight to the longest waiter, resumed outside the lock.
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
