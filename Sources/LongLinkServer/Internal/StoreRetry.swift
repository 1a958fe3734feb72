/// Whether a store call that failed is made again, and after what wait: a plain value, so that
/// every decision is tested without a clock.
///
/// Only a failure that passes is retried. A store throws
/// ``LongLinkError/Code-swift.struct/unavailable`` when it could not reach its storage for a
/// while (a Redis primary failing over, a connection being made again, `LOADING`, `READONLY`,
/// `TRYAGAIN`, `CLUSTERDOWN`), and another code when waiting would not help (a refused login, a
/// budget, a reply it cannot read, `shutdown`). The waits grow from ``initial``, doubling up to
/// ``maximum``, each scaled by a jitter in `0.5...1` so that a fleet's servers do not come back
/// in step; none ends later than ``margin`` before the deadline, so that the answer that the store
/// could not be reached still reaches the caller in time, and no call is retried for longer than
/// ``patience`` (a request without a deadline waits that long at most).
struct StoreRetry: Sendable, Equatable {
    /// The wait after the first failure.
    var initial: Duration = .milliseconds(25)
    /// The longest wait between two attempts.
    var maximum: Duration = .milliseconds(500)
    /// How long before the deadline the last attempt is made at the latest.
    var margin: Duration = .milliseconds(200)
    /// How long one call is retried at most, whatever its deadline.
    var patience: Duration = .seconds(30)

    /// What follows a failed attempt.
    enum Decision: Sendable, Equatable {
        /// Try again after this wait.
        case retry(after: Duration)
        /// Fail with the attempt's error.
        case giveUp
    }

    /// Whether `error` says the store was away for a while rather than that the call cannot succeed.
    static func isTransient(_ error: LongLinkError) -> Bool {
        error.code == .unavailable
    }

    /// The wait after `failures` failed attempts in a row (from 1), before the deadline is
    /// considered: `initial × 2^(failures-1)`, at most `maximum`, times `jitter` (clamped to `0.5...1`).
    func backoff(afterFailures failures: Int, jitter: Double) -> Duration {
        var delay = initial
        for _ in 1..<max(1, min(failures, 32)) where delay < maximum {
            delay *= 2
        }
        return min(delay, maximum) * min(1, max(0.5, jitter))
    }

    /// What follows the `failures`-th failed attempt in a row, which failed with `error`, when
    /// `timeLeft` remains before the call's deadline: another attempt, at the latest `margin`
    /// before the deadline, or none.
    func decision(after error: LongLinkError, failures: Int, timeLeft: Duration, jitter: Double) -> Decision {
        guard Self.isTransient(error) else { return .giveUp }
        let room = timeLeft - margin
        guard room > .zero else { return .giveUp }
        return .retry(after: min(backoff(afterFailures: failures, jitter: jitter), room))
    }
}
