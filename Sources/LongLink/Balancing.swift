internal import LongLinkWire

/// How the client chooses among several endpoints: probing, scoring, banning, the connect race and
/// live migration (see the endpoints article).
///
/// The defaults suit an app with a handful of servers in different places. Every duration is
/// measured on ``ClientConfiguration/clock``, except round-trip times, which are always measured on
/// the system's monotonic clock.
public struct Balancing: Sendable, Hashable {
    /// How long one probe (connect, `Hello`/`Welcome` and the pings) may take before the endpoint
    /// counts as timed out.
    public var probeTimeout: Duration = .seconds(2)
    /// How many `Ping`s a probe sends after `Welcome`, one after the other (each adds an RTT sample
    /// and a load report).
    public var probePings: Int = 3
    /// The most probes under way at once.
    public var probeConcurrency: Int = 8
    /// A reported load older than this is ignored (treated as 0): a server that stopped answering
    /// pings is not kept away by an old report.
    public var loadStaleAfter: Duration = .seconds(60)
    /// How fast the round-trip estimate forgets a bad sample (the time constant of its decay); a
    /// worse sample counts at once.
    public var rttDecay: Duration = .seconds(10)
    /// Endpoints whose cost is within this factor of the best one's are equally good: the client
    /// takes the better of two random picks among them, so that many clients do not all pile onto
    /// the single best server.
    public var tolerance: Double = 1.5
    /// How many of the best endpoints the connect race tries.
    public var raceWidth: Int = 3
    /// How long the race waits before starting the next endpoint while earlier ones are still
    /// connecting (a failure starts the next one at once).
    public var raceStagger: Duration = .milliseconds(250)
    /// After this many failures in a row, an endpoint is banned.
    public var banAfterFailures: Int = 3
    /// The first ban's length; each further failure doubles it, up to ``banMaximum``.
    public var banInitial: Duration = .seconds(5)
    /// The longest ban.
    public var banMaximum: Duration = .seconds(300)
    /// How often ``ClientConfiguration/endpointProvider`` is asked again while the client runs;
    /// `nil` asks it only at start, when every endpoint has failed, and on
    /// ``LongLinkClient/networkDidChange()``.
    public var refreshInterval: Duration? = .seconds(300)
    /// Live migration: re-probing while connected, and moving to a clearly better endpoint.
    public var migration: Migration = .init()

    /// The default policy.
    public init() {}

    /// When the client moves a live link to a better endpoint (make before break: the new link logs
    /// in before the old one stops taking requests).
    public struct Migration: Sendable, Hashable {
        /// How often the other endpoints are probed while connected; `nil` turns re-probing and
        /// migration for a better cost off (a full server or a `GoAway` still moves the client).
        public var reprobeInterval: Duration? = .seconds(20)
        /// Whether re-probing pauses while ``LongLinkClient/setNetworkIsExpensive(_:)`` says the network
        /// is metered (cellular).
        public var pausesOnExpensiveNetwork: Bool = true
        /// An endpoint is clearly better when its cost is below this share of the current one's.
        public var improvement: Double = 0.7
        /// ... in every probe over at least this long.
        public var sustain: Duration = .seconds(60)
        /// ... and in at least this many probes in a row.
        public var minimumProbes: Int = 3
        /// The least time between two moves; a random share of up to ``jitter`` of it is added, so
        /// that clients of one server do not all move at once.
        public var minimumInterval: Duration = .seconds(300)
        /// The random share added to ``minimumInterval`` (0 to 1).
        public var jitter: Double = 0.2
        /// A server reporting at least this load (in `Welcome` or a `Pong`) is left at once for the
        /// best other endpoint, if one is below it.
        public var leaveAtLoadPermille: Int = 950

        /// The default migration policy.
        public init() {}
    }

    /// The cost of an endpoint from its round-trip estimate and its reported load (0 to 1): the
    /// round trip inflated by the load, `rtt / (1 - min(load, 0.95))`. An idle server costs its
    /// round trip; a server at half load costs twice that; a full one twenty times.
    public static func cost(roundTrip: Duration, load: Double) -> Double {
        roundTrip.seconds / (1 - min(max(load, 0), 0.95))
    }

    func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: "balancing: " + message)
        }
        if probeTimeout <= .zero { throw fail("probeTimeout must be positive") }
        if probePings < 0 || probePings > 100 { throw fail("probePings must be 0 to 100") }
        if probeConcurrency < 1 { throw fail("probeConcurrency must be at least 1") }
        if loadStaleAfter <= .zero || rttDecay <= .zero { throw fail("loadStaleAfter and rttDecay must be positive") }
        if !(tolerance >= 1) { throw fail("tolerance must be at least 1") }
        if raceWidth < 1 { throw fail("raceWidth must be at least 1") }
        if raceStagger < .zero { throw fail("raceStagger must not be negative") }
        if banAfterFailures < 1 { throw fail("banAfterFailures must be at least 1") }
        if banInitial < .zero || banMaximum < banInitial {
            throw fail("bans must satisfy 0 <= banInitial <= banMaximum")
        }
        if let refreshInterval, refreshInterval <= .zero { throw fail("refreshInterval must be positive") }
        if let interval = migration.reprobeInterval, interval <= .zero {
            throw fail("migration.reprobeInterval must be positive")
        }
        if !(migration.improvement > 0 && migration.improvement < 1) {
            throw fail("migration.improvement must be between 0 and 1")
        }
        if migration.sustain < .zero || migration.minimumInterval < .zero || migration.minimumProbes < 1 {
            throw fail("migration.sustain and minimumInterval must not be negative, minimumProbes >= 1")
        }
        if !(migration.jitter >= 0 && migration.jitter <= 1) { throw fail("migration.jitter must be 0 to 1") }
        if migration.leaveAtLoadPermille < 1 || migration.leaveAtLoadPermille > 1001 {
            throw fail("migration.leaveAtLoadPermille must be 1 to 1001 (1001 never leaves)")
        }
    }
}
