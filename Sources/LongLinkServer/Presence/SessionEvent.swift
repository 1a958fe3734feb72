/// A session of a principal began or ended on this server (see ``LongLinkServer/sessionEvents()``).
///
/// A session is one connection bound to a principal: it begins when a handler binds the
/// connection (``RequestContext/bind(principal:)``, a login) and ends when the connection
/// closes, is told to go away, or is bound to another principal.
public struct SessionEvent: Sendable, Hashable {
    /// Whether the session began or ended, and why it ended.
    public enum Kind: Sendable, Hashable {
        /// The connection was bound to the principal.
        case began
        /// The session ended, for this reason.
        case ended(SessionEndReason)
    }

    /// The principal.
    public var principal: String
    /// The connection's client id (from its `Hello`).
    public var clientID: String
    /// The connection's id on this server (as ``RequestContext/connectionID``).
    public var connectionID: UInt64
    /// What happened.
    public var kind: Kind

    /// An event.
    public init(principal: String, clientID: String, connectionID: UInt64, kind: Kind) {
        self.principal = principal
        self.clientID = clientID
        self.connectionID = connectionID
        self.kind = kind
    }
}

/// Why a session ended.
public enum SessionEndReason: Sendable, Hashable, CustomStringConvertible {
    /// The client closed the connection.
    case closedByClient
    /// The connection failed (reset, an I/O error); the message says how.
    case connectionLost(String)
    /// The server told the client to go away (`GoAway`): a kick, a login elsewhere
    /// (`UNAUTHENTICATED`, "logged in elsewhere"), an idle link, a protocol violation, a shutdown.
    case goAway(code: StatusCode, reason: String)
    /// The connection was bound to another principal.
    case rebound

    public var description: String {
        switch self {
        case .closedByClient: "closed by the client"
        case .connectionLost(let message): "connection lost: \(message)"
        case .goAway(let code, let reason): "GoAway \(code): \(reason)"
        case .rebound: "bound to another principal"
        }
    }
}
