internal import LongLinkWire

/// How the client waits between reconnection attempts: exponential growth with full jitter, a
/// cap, and a reset once a connection has stayed up for a while.
///
/// Attempt *n* (from 0) waits a random time in `0...min(maximum, initial * multiplier^n)` ("full
/// jitter"), so that many clients cut off together do not come back together.
public struct Backoff: Sendable, Hashable {
    /// The upper bound of the first delay.
    public var initial: Duration
    /// The largest delay.
    public var maximum: Duration
    /// How much the bound grows per failed attempt.
    public var multiplier: Double
    /// A connection that stays up this long resets the backoff to ``initial``.
    public var resetAfter: Duration
    /// Whether delays are randomised in `0...bound` (true) or equal to the bound (false).
    public var jitter: Bool

    /// Creates a backoff policy.
    public init(
        initial: Duration = .milliseconds(250), maximum: Duration = .seconds(30), multiplier: Double = 2,
        resetAfter: Duration = .seconds(30), jitter: Bool = true
    ) {
        self.initial = initial
        self.maximum = maximum
        self.multiplier = multiplier
        self.resetAfter = resetAfter
        self.jitter = jitter
    }

    /// The upper bound of the delay before attempt `attempt` (0 for the first retry).
    public func bound(forAttempt attempt: Int) -> Duration {
        let base = initial.seconds * pow2(multiplier, attempt)
        return .seconds(min(maximum.seconds, base))
    }

    /// The delay before attempt `attempt`, drawn with `random` (a value in `0...1`).
    public func delay(forAttempt attempt: Int, random: Double) -> Duration {
        let bound = bound(forAttempt: attempt)
        return jitter ? .seconds(bound.seconds * min(1, max(0, random))) : bound
    }

    private func pow2(_ base: Double, _ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<min(exponent, 64) {
            result *= base
            if result > 1e12 { break }
        }
        return result
    }
}
