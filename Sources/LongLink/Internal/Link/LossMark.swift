/// Marks the error of a link the client closed itself for a reason its code cannot say (a dead
/// link is `connectionLost`, like a link dropped during login; an expiry is `unauthenticated`,
/// like a rejected login), so that ``DisconnectCause/init(_:)`` tells them apart without reading
/// messages. It rides as the error's ``LongLinkError/underlying``.
enum LossMark: Error, Sendable, CustomStringConvertible {
    /// The heartbeat or a liveness probe found the link silent.
    case heartbeatTimeout
    /// The session's credential expired before a refresh renewed it, or the provider handed out
    /// one expired already.
    case credentialExpired

    /// What the client did, after the error's own message.
    var description: String {
        switch self {
        case .heartbeatTimeout: "declared dead by the client"
        case .credentialExpired: "ended by the client at the expiry"
        }
    }

    /// The mark on `error` or on an error it wraps (a rejected login wraps the provider's).
    static func on(_ error: LongLinkError) -> LossMark? {
        var next: LongLinkError? = error
        // Bounded: a chain of wrapped errors is a few deep.
        for _ in 0..<8 {
            guard let error = next else { return nil }
            if let mark = error.underlying as? LossMark { return mark }
            next = error.underlying as? LongLinkError
        }
        return nil
    }
}
