internal import LongLinkWire

/// What the server said about itself when the link opened (its `Welcome`): the values a login step
/// may want to log or act on.
public struct ServerInfo: Sendable, Hashable {
    /// The protocol version the server speaks on this link.
    public var protocolVersion: Int
    /// The server's identity (for logs and statistics).
    public var serverID: String
    /// The heartbeat interval both sides use on this link.
    public var heartbeat: Duration
    /// The largest frame the server accepts, in bytes.
    public var maxFrameBytes: Int
    /// The server's load when the link opened, from 0 (idle) to 1000 (full).
    public var loadPermille: Int
    /// How long the server remembers a (client id, request id) to answer a resent request from its
    /// stored reply; `nil` when the server does not de-duplicate.
    public var dedupeWindow: Duration?
    /// The most requests the server runs at once for this link (the client queues the rest); `nil`
    /// when the server did not say.
    public var maxInFlight: Int?

    /// Creates a description of a server (for tests of login steps).
    public init(
        protocolVersion: Int = 1, serverID: String, heartbeat: Duration, maxFrameBytes: Int, loadPermille: Int = 0,
        dedupeWindow: Duration? = nil, maxInFlight: Int? = nil
    ) {
        self.protocolVersion = protocolVersion
        self.serverID = serverID
        self.heartbeat = heartbeat
        self.maxFrameBytes = maxFrameBytes
        self.loadPermille = loadPermille
        self.dedupeWindow = dedupeWindow
        self.maxInFlight = maxInFlight
    }

    /// The server's `Welcome` as the link uses it: `heartbeat` and `maxFrameBytes` after the
    /// client's bounds (see `ServerBounds`).
    init(_ welcome: Frame.Welcome, heartbeat: Duration, maxFrameBytes: Int) {
        self.init(
            protocolVersion: Int(welcome.version), serverID: welcome.serverID, heartbeat: heartbeat,
            maxFrameBytes: maxFrameBytes, loadPermille: Int(welcome.loadPermille),
            dedupeWindow: welcome.dedupeWindowMilliseconds > 0
                ? .milliseconds(Int64(welcome.dedupeWindowMilliseconds)) : nil,
            maxInFlight: welcome.maxInFlight > 0 ? Int(welcome.maxInFlight) : nil)
    }
}
