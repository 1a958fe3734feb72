/// Learns, per network, the longest heartbeat interval the network's NAT tolerates on an idle link
/// (the algorithm of ``AdaptiveHeartbeat``).
///
/// A pure value type: the client core tells it what happened (an idle interval survived, an idle
/// link died) with the time, and uses the interval it returns; tests drive it with a manual clock.
/// A report about another interval than the one in force (a link that began before a step) is
/// ignored, so that a late answer never counts for the wrong value.
struct HeartbeatLearner: Sendable, Equatable {
    typealias Instant = ContinuousClock.Instant

    /// What is known about one network.
    struct Record: Sendable, Equatable {
        /// The interval in force.
        var interval: Duration
        /// The longest interval known to survive; a failed probe goes back to it.
        var survived: Duration
        /// When ``interval`` was found stable, or nil while probing upward.
        var stableSince: Instant?
        /// Idle intervals survived in a row at ``interval``.
        var successes = 0
        /// Failures in a row of a stable ``interval``.
        var failures = 0
        /// Larger is more recent (for forgetting the least recently used network).
        var lastUsed: UInt64 = 0

        var isProbing: Bool { stableSince == nil && interval > survived }
    }

    let parameters: AdaptiveHeartbeat
    private(set) var records: [NetworkKey: Record] = [:]
    private var uses: UInt64 = 0

    init(parameters: AdaptiveHeartbeat) {
        self.parameters = parameters
    }

    /// The interval to use on `network` now.
    func interval(for network: NetworkKey) -> Duration {
        records[network]?.interval ?? parameters.start
    }

    /// Whether `network`'s interval in force is a probe, above any interval known to survive: an
    /// idle link that dies now answers the probe.
    func isProbing(_ network: NetworkKey) -> Bool {
        records[network]?.isProbing ?? false
    }

    /// An idle interval of `interval` survived on `network` (a `Ping` sent after that long with
    /// nothing received was answered). Returns the new interval when it changes (a step up).
    mutating func survived(_ interval: Duration, on network: NetworkKey, at now: Instant) -> Duration? {
        var record = touch(network)
        defer { records[network] = record }
        guard record.interval == interval else { return nil }
        record.failures = 0
        record.successes += 1
        if let stableSince = record.stableSince {
            // Stable: probe higher again once the stable value is old enough (the NAT may have changed).
            guard now - stableSince >= parameters.reprobeAfter, record.interval < parameters.maximum else {
                return nil
            }
            return stepUp(&record)
        }
        guard record.successes >= parameters.successesBeforeStep else { return nil }
        record.survived = record.interval
        guard record.interval < parameters.maximum else {
            // Nothing higher to try: the maximum is the network's stable value.
            record.stableSince = now
            record.successes = 0
            return nil
        }
        return stepUp(&record)
    }

    /// An idle link on `network` died with `interval` in force (its heartbeat found it dead; not a
    /// reset, a cut the app reported or a server's `GoAway`, which say nothing about the NAT).
    /// Returns the new interval when it changes.
    mutating func idleLinkDied(_ interval: Duration, on network: NetworkKey, at now: Instant) -> Duration? {
        var record = touch(network)
        defer { records[network] = record }
        guard record.interval == interval else { return nil }
        record.successes = 0
        if record.isProbing {
            // The probe found the limit: back to the last value that survived, kept as stable.
            record.interval = record.survived
            record.stableSince = now
            record.failures = 0
            return record.interval
        }
        record.failures += 1
        guard record.failures >= parameters.failuresBeforeStepDown, record.interval > parameters.start else {
            return nil
        }
        // A stable value that keeps failing: the NAT became stricter.
        record.interval = max(parameters.start, record.interval - parameters.step)
        record.survived = min(record.survived, record.interval)
        record.stableSince = now
        record.failures = 0
        return record.interval
    }

    private func stepUp(_ record: inout Record) -> Duration {
        record.survived = max(record.survived, record.interval)
        record.interval = min(record.interval + parameters.step, parameters.maximum)
        record.stableSince = nil
        record.successes = 0
        return record.interval
    }

    /// The record of `network`, made when new and marked most recently used; past
    /// ``AdaptiveHeartbeat/maxNetworks`` the least recently used other network is forgotten.
    private mutating func touch(_ network: NetworkKey) -> Record {
        uses += 1
        var record =
            records[network]
            ?? Record(interval: parameters.start, survived: parameters.start, stableSince: nil)
        record.lastUsed = uses
        if records[network] == nil, records.count >= parameters.maxNetworks,
            let oldest = records.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key
        {
            records[oldest] = nil
        }
        return record
    }

    /// Puts a restored record in place (see `HeartbeatLearner+Snapshot.swift`).
    mutating func restore(_ network: NetworkKey, _ record: Record) {
        guard records.count < parameters.maxNetworks || records[network] != nil else { return }
        uses += 1
        var record = record
        record.lastUsed = uses
        records[network] = record
    }
}
