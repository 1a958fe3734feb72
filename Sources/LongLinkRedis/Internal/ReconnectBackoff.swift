/// When the next connection attempt to Redis may start: a plain value, so tests step it with
/// instants of their own instead of waiting.
///
/// After `n` failed attempts in a row the next waits `initial × 2^(n-1)`, at most `maximum`,
/// scaled by a jitter in `0.5...1` so that a fleet of servers does not reconnect in lockstep.
struct ReconnectBackoff: Sendable {
    let initial: Duration
    let maximum: Duration
    private(set) var failures = 0
    private(set) var notBefore: ContinuousClock.Instant?

    init(initial: Duration, maximum: Duration) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The wait after `failures` failed attempts, before jitter.
    func delay(afterFailures failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        var delay = initial
        for _ in 1..<min(failures, 32) {
            delay *= 2
            if delay >= maximum { return maximum }
        }
        return min(delay, maximum)
    }

    /// Whether an attempt may start at `now`.
    func permitsAttempt(at now: ContinuousClock.Instant) -> Bool {
        notBefore.map { now >= $0 } ?? true
    }

    /// An attempt failed at `now`; `jitter` in `0.5...1` scales the wait.
    mutating func failed(at now: ContinuousClock.Instant, jitter: Double) {
        failures += 1
        notBefore = now + delay(afterFailures: failures) * min(1, max(0.5, jitter))
    }

    /// An attempt succeeded: the next failure starts from ``initial`` again.
    mutating func succeeded() {
        failures = 0
        notBefore = nil
    }
}
