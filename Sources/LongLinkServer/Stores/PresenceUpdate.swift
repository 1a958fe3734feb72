/// What ``PushStore/updatePresence(_:)`` writes: sessions of one server that began (or are still
/// there, renewed) and sessions that ended.
///
/// A store that shares presence keeps each session until `lease` after the last update that named
/// it present, so that the sessions of a server that crashed, and so never said they ended, are
/// gone within the lease. The server renews all its sessions every third of the lease.
public struct PresenceUpdate: Sendable, Hashable {
    /// One session: a connection of this server bound to a principal.
    public struct Session: Sendable, Hashable {
        /// The principal the connection is bound to.
        public var principal: String
        /// The connection's id on this server.
        public var connectionID: UInt64

        /// The session of connection `connectionID` as `principal`.
        public init(principal: String, connectionID: UInt64) {
            self.principal = principal
            self.connectionID = connectionID
        }
    }

    /// The server's ``ServerConfiguration/serverID``.
    public var serverID: String
    /// A token of this run of the server (letters and digits), so that two servers given one
    /// `serverID`, or a server's next run, never write over each other's sessions.
    public var instance: String
    /// How long after this update the sessions in ``present`` last unless renewed
    /// (``ServerConfiguration/presenceLease``).
    public var lease: Duration
    /// Sessions that began or are renewed.
    public var present: [Session]
    /// Sessions that ended.
    public var absent: [Session]

    /// An update from `serverID`'s run `instance`.
    public init(serverID: String, instance: String, lease: Duration, present: [Session], absent: [Session]) {
        self.serverID = serverID
        self.instance = instance
        self.lease = lease
        self.present = present
        self.absent = absent
    }
}
