/// Why the client's last link was lost, or why its last attempt to make one failed: what
/// ``ConnectionState/cause`` carries and its ``ConnectionState/description`` prints, so that an app
/// (or a person reading its log) can tell a flaky network from a server that went away, a
/// certificate problem or a session the server ended.
public enum DisconnectCause: Sendable, Equatable, CustomStringConvertible {
    /// The peer (or something on the path) reset the connection (TCP RST).
    case resetByPeer
    /// The peer closed the connection without saying why (no `GoAway`).
    case closedByPeer
    /// Nothing came back for two heartbeat intervals, or no answer to a liveness probe: the link
    /// was silent (a black hole, a NAT that forgot the mapping, a frozen server), so the client
    /// declared it dead.
    case heartbeatTimeout
    /// The TLS handshake or the certificate check failed, or a TLS record could not be read; with
    /// the error's message (an untrusted certificate, a pin that does not match, ...).
    case tlsFailure(String)
    /// The server sent `GoAway` with this status and reason (draining, restarting, shutting down,
    /// overloaded), other than a kick or an expired credential.
    case goAway(StatusCode, reason: String)
    /// Nothing listens at the endpoint: the connection was refused.
    case connectionRefused
    /// The endpoint's host name could not be resolved.
    case dnsFailure
    /// The session's credential expired before a refresh renewed it (the client's own expiry, or
    /// the server's `GoAway{UNAUTHENTICATED, "credential expired"}`): the next login asks the
    /// credential provider for a new one.
    case credentialExpired
    /// The server ended the session with `GoAway{UNAUTHENTICATED}` for this reason, for example
    /// "logged in elsewhere" (LongLinkServer's `kick(principal:code:reason:reconnect:retryAfter:)`).
    case kicked(reason: String)
    /// The app asked for it: ``LongLinkClient/shutdown()`` or ``LongLinkClient/shutdown(gracePeriod:)``,
    /// the cancellation of ``LongLinkClient/run()``, or ``LongLinkClient/logout(reason:)``.
    case requestedByApp
    /// Anything else (a protocol violation, a connect timeout, an unreachable host), with its error.
    case other(LongLinkError)

    /// A few words for people, for example `reset by peer`, `heartbeat timeout`,
    /// `GoAway UNAVAILABLE: server shutting down`, `kicked: logged in elsewhere` or, for
    /// ``other(_:)``, the error's code and message.
    public var description: String {
        switch self {
        case .resetByPeer: "reset by peer"
        case .closedByPeer: "closed by peer"
        case .heartbeatTimeout: "heartbeat timeout"
        case .tlsFailure(let message): "TLS failure: \(message)"
        case .goAway(let code, let reason): "GoAway \(code): \(reason)"
        case .connectionRefused: "connection refused"
        case .dnsFailure: "DNS failure"
        case .credentialExpired: "credential expired"
        case .kicked(let reason): "kicked: \(reason)"
        case .requestedByApp: "requested by the app"
        case .other(let error): "\(error.code): \(error.message)"
        }
    }

    /// Equal causes of the same kind, with the same message, status and reason; ``other(_:)``
    /// compares the errors' codes and messages.
    public static func == (lhs: DisconnectCause, rhs: DisconnectCause) -> Bool {
        switch (lhs, rhs) {
        case (.resetByPeer, .resetByPeer), (.closedByPeer, .closedByPeer), (.heartbeatTimeout, .heartbeatTimeout),
            (.connectionRefused, .connectionRefused), (.dnsFailure, .dnsFailure),
            (.credentialExpired, .credentialExpired), (.requestedByApp, .requestedByApp):
            true
        case (.tlsFailure(let a), .tlsFailure(let b)): a == b
        case (.goAway(let a, let x), .goAway(let b, let y)): a == b && x == y
        case (.kicked(let a), .kicked(let b)): a == b
        case (.other(let a), .other(let b)): a.code == b.code && a.message == b.message
        default: false
        }
    }
}
