import Foundation

/// What an adaptive heartbeat learned, per network, in a form an app can keep across launches
/// (see ``HeartbeatStore``). Times are wall-clock, so that a snapshot read after a restart still
/// knows how long ago an interval was found stable.
public struct HeartbeatSnapshot: Sendable, Hashable, Codable {
    /// What was learned about one network.
    public struct Network: Sendable, Hashable, Codable {
        /// The network.
        public var key: NetworkKey
        /// The interval in force when the snapshot was taken, in milliseconds.
        public var intervalMilliseconds: Int64
        /// The longest interval known to survive, in milliseconds (the value a failed probe goes
        /// back to).
        public var survivedMilliseconds: Int64
        /// When the interval in force was found stable (a probe above it failed), or nil while
        /// still probing upward.
        public var stableSince: Date?
        /// Creates an entry.
        public init(key: NetworkKey, intervalMilliseconds: Int64, survivedMilliseconds: Int64, stableSince: Date?) {
            self.key = key
            self.intervalMilliseconds = intervalMilliseconds
            self.survivedMilliseconds = survivedMilliseconds
            self.stableSince = stableSince
        }
    }

    /// The format, so that a later version can tell an older snapshot. 1.
    public var version: Int = 1
    /// The networks, most recently used first.
    public var networks: [Network]

    /// Creates a snapshot.
    public init(networks: [Network]) {
        self.networks = networks
    }
}
