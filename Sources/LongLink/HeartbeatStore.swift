/// Where an adaptive heartbeat keeps what it learned across launches (see
/// ``ClientConfiguration/heartbeatStore``). An app implements it over its own storage
/// (`UserDefaults`, a database), or uses ``FileHeartbeatStore``.
///
/// The client loads once when it is created and saves after each change of what it learned (a
/// step, a failure, a re-probe): a few times an hour at most. Both are called on the client's event
/// loop, so they should be quick.
public protocol HeartbeatStore: Sendable {
    /// The last snapshot saved, or nil when there is none. An error (a corrupt file) is logged and
    /// the client starts learning afresh; it is never fatal.
    func load() throws -> HeartbeatSnapshot?
    /// Keeps `snapshot`, replacing the previous one. An error is logged and otherwise ignored.
    func save(_ snapshot: HeartbeatSnapshot) throws
}

/// Why a ``HeartbeatStore`` could not load or save.
public struct HeartbeatStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The stored bytes are not a snapshot (truncated, corrupt, or of another format).
        case corrupt
        /// The storage could not be read or written.
        case unavailable
    }

    /// What went wrong.
    public var kind: Kind
    /// Details for the log.
    public var message: String

    /// Creates an error.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The kind and the details.
    public var description: String { "heartbeat store \(kind): \(message)" }
}
