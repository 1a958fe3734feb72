internal import LongLinkServer

/// How a fleet server shows the others that it is alive, so that a request it was running when
/// it stopped is answered at once rather than at its caller's deadline.
///
/// Each ``RedisDedupeStore`` holds a lease in Redis (`<prefix>lease:<owner>`, set with
/// `PX timeToLive`) and renews it, and the claims of the requests it runs, every ``interval``.
/// A server waiting for another's request whose owner's lease is gone answers it `UNKNOWN`
/// (``LongLinkError/Code-swift.struct/outcomeUnknown`` on the client) and marks it so that no
/// server runs it again; while the lease lives, the claim is renewed and nobody else runs it.
public struct ClaimLease: Sendable, Hashable {
    /// How often the lease and the claims are renewed.
    public var interval: Duration
    /// How long the lease lasts unrenewed: how long after a crash its requests are answered
    /// `UNKNOWN`. At least twice ``interval``, so that one late renewal does not end it.
    public var timeToLive: Duration

    /// A lease renewed every `interval`, lasting `timeToLive` (1 s and 3 s by default).
    public init(interval: Duration = .seconds(1), timeToLive: Duration = .seconds(3)) {
        self.interval = interval
        self.timeToLive = timeToLive
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless 1 ms ≤ interval and
    /// timeToLive ≥ 2 × interval.
    func validate() throws(LongLinkError) {
        guard interval >= .milliseconds(1) else {
            throw LongLinkError(code: .invalidConfiguration, message: "ClaimLease.interval must be at least 1 ms")
        }
        guard timeToLive >= interval * 2 else {
            throw LongLinkError(
                code: .invalidConfiguration, message: "ClaimLease.timeToLive must be at least twice its interval")
        }
    }
}
