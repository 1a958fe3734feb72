internal import LongLinkWire

extension DisconnectCause {
    /// The reason of the server's `GoAway` for an expired credential (Protocol.md, "Credential expiry").
    static let credentialExpiredReason = "credential expired"

    /// Why a link ended, or an attempt failed (`.closed(error)` with the attempt's error): the one
    /// mapping from what the transport, the heartbeat, the credentials and the server's `GoAway`
    /// report to the cause a ``ConnectionState`` carries.
    init(_ end: LinkEnd) {
        switch end {
        case .shutdown:
            self = .requestedByApp
        case .migrated:
            // Not a loss: the requests moved to the new link. Named for completeness.
            self = .other(end.error)
        case .goAway(let goAway) where goAway.code == .unauthenticated:
            self =
                goAway.reason == Self.credentialExpiredReason ? .credentialExpired : .kicked(reason: goAway.reason)
        case .goAway(let goAway):
            self = .goAway(goAway.code, reason: goAway.reason)
        case .closed(nil):
            // The transport reports a clean end of stream without an error.
            self = .closedByPeer
        case .closed(let error?):
            self = Self.cause(of: error)
        }
    }

    private static func cause(of error: LongLinkError) -> DisconnectCause {
        switch LossMark.on(error) {
        case .heartbeatTimeout: return .heartbeatTimeout
        case .credentialExpired: return .credentialExpired
        case nil: break
        }
        switch error.code {
        case .connectionReset: return .resetByPeer
        case .connectionClosed: return .closedByPeer
        case .tlsFailure: return .tlsFailure(error.message)
        case .connectionRefused: return .connectionRefused
        case .addressResolutionFailed: return .dnsFailure
        case .shutdown: return .requestedByApp
        default: return .other(error)
        }
    }
}
