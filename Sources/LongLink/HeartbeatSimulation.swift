/// A day of one idle link behind a NAT, simulated on virtual time with the adaptive heartbeat's own
/// learner (no sockets, no waiting), for `longlink-bench heartbeat` and `longlink demo --nat`.
///
/// The model: the client pings after an interval H of silence; its heartbeat ticks four times per
/// interval, so the mapping is idle for H to 1.25 H before each `Ping` (modelled as 1.125 H). A gap
/// shorter than the NAT's timeout survives; a longer one loses the mapping, and the client notices
/// when its `Ping` goes unanswered (the answer timeout; with a fixed heartbeat, two intervals after
/// the last traffic), then reconnects at once.
@_spi(Benchmarks)
public struct HeartbeatSimulation: Sendable {
    /// What one simulated day showed.
    public struct Outcome: Sendable, Equatable {
        /// Heartbeat `Ping`s sent, proposals on the live link included.
        public var pings = 0
        /// Links lost to the NAT while the learner was probing (the probes that found the limit).
        public var probeLosses = 0
        /// Links lost to the NAT at an interval believed safe.
        public var silentLosses = 0
        /// The interval in force at the end of the day.
        public var finalInterval: Duration = .zero
        /// Time from the start until the interval was stable (nil: never).
        public var learnedAfter: Duration?
    }

    /// The NAT's idle timeout.
    public var natTimeout: Duration
    /// The simulated span.
    public var span: Duration

    /// A simulation of `span` behind a NAT that forgets a mapping idle for `natTimeout`.
    public init(natTimeout: Duration, span: Duration = .seconds(86_400)) {
        self.natTimeout = natTimeout
        self.span = span
    }

    /// The idle gap before a `Ping` at interval `interval`.
    static func gap(_ interval: Duration) -> Duration { interval * 9 / 8 }

    /// A fixed heartbeat of `interval` for the whole span.
    public func fixed(_ interval: Duration) -> Outcome {
        var outcome = Outcome(finalInterval: interval, learnedAfter: .zero)
        var now = Duration.zero
        while now < span {
            let gap = Self.gap(interval)
            now += gap
            outcome.pings += 1
            if gap >= natTimeout {
                // Noticed two intervals after the last traffic; the new link starts from there.
                outcome.silentLosses += 1
                now += interval * 2 - gap
            }
        }
        return outcome
    }

    /// The adaptive heartbeat with `parameters` for the whole span, on network `network`.
    public func adaptive(_ parameters: AdaptiveHeartbeat, network: NetworkKey = .cellular) -> Outcome {
        let origin = ContinuousClock.now
        var learner = HeartbeatLearner(parameters: parameters)
        var outcome = Outcome()
        var now = Duration.zero
        while now < span {
            let interval = learner.interval(for: network)
            let gap = Self.gap(interval)
            now += gap
            outcome.pings += 1
            if gap < natTimeout {
                if learner.survived(interval, on: network, at: origin.advanced(by: now)) != nil {
                    outcome.pings += 1  // the proposal on the live link
                }
            } else {
                if learner.isProbing(network) { outcome.probeLosses += 1 } else { outcome.silentLosses += 1 }
                _ = learner.idleLinkDied(interval, on: network, at: origin.advanced(by: now))
                now += parameters.answerTimeout
            }
            if outcome.learnedAfter == nil, !learner.isProbing(network), learner.records[network]?.stableSince != nil {
                outcome.learnedAfter = now
            }
        }
        outcome.finalInterval = learner.interval(for: network)
        return outcome
    }
}
