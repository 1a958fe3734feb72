/// One store call made again while ``StoreRetry`` says so.
extension StoreRetry {
    /// What the retries of a call need from time: the current instant, a wait, and the jitter. The
    /// server's is ``system`` (request deadlines keep real time); tests pass one of their own, so
    /// that no test waits.
    struct Timing: Sendable {
        /// The current instant.
        var now: @Sendable () -> ContinuousClock.Instant
        /// Waits until the instant; returns false when the calling task was cancelled meanwhile.
        var sleep: @Sendable (ContinuousClock.Instant) async -> Bool
        /// A value in `0.5...1` that scales one wait.
        var jitter: @Sendable () -> Double

        /// `ContinuousClock` and `Task.sleep`.
        static let system = Timing(
            now: { ContinuousClock.now },
            sleep: { deadline in (try? await Task.sleep(until: deadline, clock: .continuous)) != nil },
            jitter: { Double.random(in: 0.5...1) })
    }

    /// How one call through ``call(until:timing:retrying:_:)`` ended when it failed: the last
    /// attempt's error, and whether the call gave up on a failure that passes (the deadline or the
    /// patience came first) rather than on one that does not.
    struct Failure: Error {
        let error: LongLinkError
        let failures: Int
        /// The last attempt failed with a transient error: the store may answer later.
        var outlasted: Bool { StoreRetry.isTransient(error) }
    }

    /// Calls `operation` until it returns, fails for good, or no attempt fits before `deadline`
    /// (less ``margin``) or the call's ``patience``; `retrying` is told before each new attempt
    /// (from the second). A cancelled task makes no new attempt: it fails `cancelled`.
    func call<T>(
        until deadline: ContinuousClock.Instant, timing: Timing = .system, retrying: () -> Void = {},
        _ operation: () async throws(LongLinkError) -> T
    ) async throws(Failure) -> T {
        let start = timing.now()
        let end = min(deadline, start.advanced(by: patience))
        var failures = 0
        while true {
            let error: LongLinkError
            do throws(LongLinkError) {
                return try await operation()
            } catch let failed {
                error = failed
            }
            failures += 1
            let decision = decision(
                after: error, failures: failures, timeLeft: end - timing.now(), jitter: timing.jitter())
            guard case .retry(let wait) = decision else { throw Failure(error: error, failures: failures) }
            guard !Task.isCancelled, await timing.sleep(timing.now().advanced(by: wait)) else {
                throw Failure(error: Self.cancelled, failures: failures)
            }
            retrying()
        }
    }

    /// What a call cancelled between two attempts fails with.
    static let cancelled = LongLinkError(
        code: .cancelled, message: "the store call was cancelled while waiting to be made again")
}
