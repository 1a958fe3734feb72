import LongLinkCore
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkServer

/// The retries of a store call that failed: which failures are retried, the waits, and the
/// deadline they never pass. No test waits: time is the tests' own.
@Suite("Store retries: a store briefly away is waited for, within the deadline", .sharedMachine)
struct StoreRetryTests {
    static let unavailable = LongLinkError(code: .unavailable, message: "Redis is failing over")

    /// Time that passes only when a retry waits; records each wait.
    final class VirtualTime: Sendable {
        let start = ContinuousClock.now
        private let state: Locked<(now: ContinuousClock.Instant, waits: [Duration])>

        init() { state = Locked((start, [])) }

        var waits: [Duration] { state.withLock { $0.waits } }
        var elapsed: Duration { state.withLock { $0.now - start } }

        /// Jitter 1: every wait its full bound.
        var timing: StoreRetry.Timing {
            StoreRetry.Timing(
                now: { self.state.withLock { $0.now } },
                sleep: { until in
                    self.state.withLock { state in
                        state.waits.append(until - state.now)
                        state.now = max(state.now, until)
                    }
                    return true
                },
                jitter: { 1 })
        }
    }

    /// Counts its calls; fails with the given errors in turn, then returns the number of calls.
    final class FlakyCall: Sendable {
        private let state: Locked<(calls: Int, errors: [LongLinkError])>

        init(failing errors: [LongLinkError]) { state = Locked((0, errors)) }

        var calls: Int { state.withLock { $0.calls } }

        func callAsFunction() throws(LongLinkError) -> Int {
            let next = state.withLock { state -> Result<Int, LongLinkError> in
                state.calls += 1
                return state.errors.isEmpty ? .success(state.calls) : .failure(state.errors.removeFirst())
            }
            return try next.get()
        }
    }

    // MARK: The schedule

    @Test func waitsDoubleFromTheFirstUpToTheCap() {
        let retry = StoreRetry()
        let waits = (1...8).map { retry.backoff(afterFailures: $0, jitter: 1) }
        #expect(waits == [25, 50, 100, 200, 400, 500, 500, 500].map { Duration.milliseconds($0) })
        // The jitter scales a wait by 0.5...1, whatever it is given; no count overflows.
        #expect(retry.backoff(afterFailures: 3, jitter: 0.5) == .milliseconds(50))
        #expect(retry.backoff(afterFailures: 3, jitter: 0) == .milliseconds(50))
        #expect(retry.backoff(afterFailures: 3, jitter: 7) == .milliseconds(100))
        #expect(retry.backoff(afterFailures: .max, jitter: 1) == .milliseconds(500))
        #expect(retry.backoff(afterFailures: 0, jitter: 1) == .milliseconds(25))
    }

    @Test func onlyAFailureThatPassesIsRetried() {
        let retry = StoreRetry()
        #expect(
            retry.decision(after: Self.unavailable, failures: 1, timeLeft: .seconds(10), jitter: 1)
                == .retry(after: .milliseconds(25)))
        for code: LongLinkError.Code in [
            .outcomeUnknown, .resourceExhausted, .shutdown, .cancelled, .internalError, .unauthenticated,
            .tlsFailure, .protocolViolation, .invalidArgument, .deadlineExceeded,
        ] {
            let error = LongLinkError(code: code, message: "final")
            #expect(retry.decision(after: error, failures: 1, timeLeft: .seconds(10), jitter: 1) == .giveUp)
        }
    }

    @Test func noAttemptIsMadeLaterThanTheMarginBeforeTheDeadline() {
        let retry = StoreRetry()
        // 500 ms would be the wait; 300 ms are left before the margin.
        #expect(
            retry.decision(after: Self.unavailable, failures: 9, timeLeft: .milliseconds(500), jitter: 1)
                == .retry(after: .milliseconds(300)))
        #expect(
            retry.decision(after: Self.unavailable, failures: 1, timeLeft: .milliseconds(201), jitter: 1)
                == .retry(after: .milliseconds(1)))
        // Within the margin, or past the deadline: no more attempts.
        #expect(
            retry.decision(after: Self.unavailable, failures: 1, timeLeft: .milliseconds(200), jitter: 1) == .giveUp)
        #expect(retry.decision(after: Self.unavailable, failures: 1, timeLeft: .zero, jitter: 1) == .giveUp)
        #expect(retry.decision(after: Self.unavailable, failures: 1, timeLeft: .seconds(-3), jitter: 1) == .giveUp)
    }

    // MARK: One call

    @Test func aCallIsMadeAgainUntilTheStoreAnswers() async throws {
        let time = VirtualTime()
        let flaky = FlakyCall(failing: Array(repeating: Self.unavailable, count: 3))
        let retried = Locked(0)
        let result = try await StoreRetry().call(
            until: time.start + .seconds(10), timing: time.timing, retrying: { retried.withLock { $0 += 1 } }
        ) { () throws(LongLinkError) in try flaky() }
        #expect(result == 4)
        #expect(flaky.calls == 4 && retried.withLock { $0 } == 3)
        #expect(time.waits == [25, 50, 100].map { Duration.milliseconds($0) })
    }

    @Test func aFailureThatDoesNotPassEndsTheCallAtOnce() async {
        let time = VirtualTime()
        let flaky = FlakyCall(failing: [LongLinkError(code: .outcomeUnknown, message: "its server stopped")])
        await #expect {
            _ = try await StoreRetry().call(until: time.start + .seconds(10), timing: time.timing) {
                () throws(LongLinkError) in try flaky()
            }
        } throws: { error in
            let failure = error as? StoreRetry.Failure
            return failure?.error.code == .outcomeUnknown && failure?.failures == 1 && failure?.outlasted == false
        }
        #expect(flaky.calls == 1 && time.waits.isEmpty)
    }

    @Test func anOutageLongerThanTheDeadlineEndsTheCallBeforeIt() async {
        let time = VirtualTime()
        let flaky = FlakyCall(failing: Array(repeating: Self.unavailable, count: 1_000))
        let retry = StoreRetry()
        await #expect {
            _ = try await retry.call(until: time.start + .seconds(2), timing: time.timing) {
                () throws(LongLinkError) in try flaky()
            }
        } throws: { error in
            (error as? StoreRetry.Failure)?.outlasted == true
        }
        // 25+50+100+200+400 ms, then 500 ms twice, then the 25 ms left before the margin.
        #expect(time.waits.reduce(.zero, +) == .seconds(2) - retry.margin)
        #expect(time.waits.last == .milliseconds(25))
        #expect(flaky.calls == time.waits.count + 1)
    }

    @Test func aCallWithoutADeadlineIsRetriedForItsPatienceAtMost() async {
        let time = VirtualTime()
        let flaky = FlakyCall(failing: Array(repeating: Self.unavailable, count: 1_000))
        await #expect(throws: StoreRetry.Failure.self) {
            _ = try await StoreRetry().call(until: time.start + .seconds(3600), timing: time.timing) {
                () throws(LongLinkError) in try flaky()
            }
        }
        #expect(time.elapsed == .seconds(30) - StoreRetry().margin)
    }

    @Test func aCancelledCallMakesNoNewAttempt() async {
        let time = VirtualTime()
        let flaky = FlakyCall(failing: Array(repeating: Self.unavailable, count: 1_000))
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await StoreRetry().call(until: time.start + .seconds(10), timing: time.timing) {
                () throws(LongLinkError) in try flaky()
            }
        }
        var code: LongLinkError.Code?
        if case .failure(let failure) = await task.result { code = (failure as? StoreRetry.Failure)?.error.code }
        #expect(code == .cancelled)
        #expect(flaky.calls == 1 && time.waits.isEmpty)
    }
}
