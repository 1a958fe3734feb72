internal import LongLinkWire

/// The values the session's state machine takes and hands back.
extension ServerSessionStateMachine {
    /// The limits the session enforces, from the server's configuration.
    struct Configuration: Sendable {
        var defaultHeartbeat: Duration
        var minimumHeartbeat: Duration
        var maximumHeartbeat: Duration
        var maxInFlight: Int

        init(_ configuration: ServerConfiguration) {
            defaultHeartbeat = configuration.defaultHeartbeat
            minimumHeartbeat = configuration.minimumHeartbeat
            maximumHeartbeat = configuration.maximumHeartbeat
            maxInFlight = configuration.maxInFlightPerConnection
        }
    }

    /// A request this session has accepted and not yet answered.
    struct InFlightRequest {
        let requestID: String
        /// Tells this admission apart from an earlier one with the same id (cancelled and sent
        /// again), so that a late answer for the earlier one is not taken for the new one.
        let token: UInt64
        /// What stops its handler, or, for a copy waiting for an execution on another connection,
        /// its own deadline timer (nil when it gave no deadline).
        var execution: Execution?
    }

    /// How the session ends: what to send first and what was still in flight.
    struct Close {
        enum Reason: Equatable {
            /// The client broke the protocol (counted in the statistics).
            case protocolViolation
            /// The client speaks another protocol version.
            case unsupportedVersion
            /// No traffic for three heartbeat intervals.
            case idle
            /// An incomplete frame took longer than the partial-frame timeout.
            case slowFrame
            /// Turned away at the server's connection limit.
            case connectionLimit
            /// Going away, and nothing is left in flight.
            case drained
            /// Going away, and the drain timeout passed first.
            case drainTimedOut
        }

        let reason: Reason
        /// Sent before closing; nil when the `GoAway` went out earlier (draining).
        let goAway: Frame.GoAway?
        /// Every request that was in flight: each handler is to be cancelled or let go.
        let inFlight: [InFlightRequest]
    }
}

extension ServerSessionStateMachine.InFlightRequest: Sendable where Execution: Sendable {}

extension ServerSessionStateMachine.Close: Sendable where Execution: Sendable {}
