/// Whether a principal is connected, and on how many sessions: across the fleet when the server's
/// push store shares presence (`LongLinkRedis`'s `RedisPushStore`), else on this server (see
/// ``LongLinkServer/presence(of:)``).
public struct Presence: Sendable, Hashable {
    /// One session of the principal: a connection bound to it on some server.
    public struct Session: Sendable, Hashable {
        /// The ``ServerConfiguration/serverID`` of the server holding the connection.
        public var serverID: String
        /// The connection's id on that server (as ``RequestContext/connectionID``).
        public var connectionID: UInt64

        /// A session on `serverID`.
        public init(serverID: String, connectionID: UInt64) {
            self.serverID = serverID
            self.connectionID = connectionID
        }
    }

    /// The most sessions ``sessions`` lists; ``count`` counts them all.
    public static let listLimit = 1000

    /// The principal asked about.
    public var principal: String
    /// How many sessions it has (0 when it is not connected).
    public var count: Int
    /// Its sessions, at most ``listLimit`` of them, in no particular order.
    public var sessions: [Session]

    /// Whether it has a session.
    public var isConnected: Bool { count > 0 }

    /// `principal` with `count` sessions, of which `sessions` are listed.
    public init(principal: String, count: Int, sessions: [Session]) {
        self.principal = principal
        self.count = count
        self.sessions = sessions
    }
}
