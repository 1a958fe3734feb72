internal import LongLinkWire

/// The values the session's state machine takes and hands back.
extension ServerSessionStateMachine {
    /// The limits the session enforces, from the server's configuration.
    struct Configuration: Sendable {
        var defaultHeartbeat: Duration
        var minimumHeartbeat: Duration
        var maximumHeartbeat: Duration
        var maxInFlight: Int
        var maxFrameBytes: Int
        var maxInflationRatio: Int
        var maxInflatedBytes: Int

        init(_ configuration: ServerConfiguration) {
            defaultHeartbeat = configuration.defaultHeartbeat
            minimumHeartbeat = configuration.minimumHeartbeat
            maximumHeartbeat = configuration.maximumHeartbeat
            maxInFlight = configuration.maxInFlightPerConnection
            maxFrameBytes = configuration.maxFrameBytes
            maxInflationRatio = configuration.maxInflationRatio
            maxInflatedBytes = configuration.maxInflatedBytesPerConnection
        }
    }

    // MARK: Actions of requests

    /// What to do with a `Request`.
    enum RequestAction {
        /// The request is now in flight under `token`: run its handler (or, with de-duplication,
        /// join or replay the execution the window names), then report its answer with
        /// ``handlerFinished(requestID:token:)``.
        case dispatch(token: UInt64)
        /// As ``dispatch(token:)`` for a compressed request: inflate its payload within `limit`
        /// first. Past the limit, answer `RESOURCE_EXHAUSTED` (nothing is in flight); once
        /// dispatched, report its inflated size with ``holdInflated(_:requestID:token:)``.
        case inflateAndDispatch(token: UInt64, limit: InflationLimit)
        /// Answer at once with this status; nothing is in flight.
        case reject(Frame.Status)
        /// As ``reject(_:)``, because the connection's in-flight limit or its budget of inflated bytes
        /// is reached.
        case rejectOverLimit(Frame.Status)
        /// The same request is in flight here already: its one answer will serve this copy too.
        case ignoreCopyInFlight
        case closeConnection(Close)
        case ignore
    }

    /// What to do when a handler that ran inline returned.
    enum InlineFinishedAction {
        case sendResponse
        /// Send the answer, then close: the session began going away during the handler and
        /// nothing else is in flight.
        case sendResponseAndClose(Close)
        /// The session closed during the handler: nothing is sent.
        case ignore
    }

    /// What to do when a request's answer is ready.
    enum HandlerFinishedAction {
        /// Send the answer; the request is no longer in flight (stop its timer).
        case sendResponse(InFlightRequest)
        /// As ``sendResponse(_:)``, then close: the session was draining and this was the last one.
        case sendResponseAndClose(InFlightRequest, Close)
        /// The request was cancelled, timed out, answered already or the session closed.
        case ignore
    }

    /// What to do when a request's deadline passes on the server.
    enum HandlerTimedOutAction {
        /// Cancel the handler and answer `DEADLINE_EXCEEDED`.
        case failTimedOut(InFlightRequest)
        /// As ``failTimedOut(_:)``, then close: the session was draining and this was the last one.
        case failTimedOutAndClose(InFlightRequest, Close)
        case ignore
    }

    /// What to do with a `Cancel`.
    enum CancelAction {
        /// Stop the request: its timer, its handler (unless a copy elsewhere waits for it); no
        /// answer is sent.
        case cancelRequest(InFlightRequest)
        /// As ``cancelRequest(_:)``, then close: the session was draining and this was the last one.
        case cancelRequestAndClose(InFlightRequest, Close)
        case closeConnection(Close)
        /// Not in flight (answered already, or never sent): nothing to do.
        case ignore
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
        /// The inflated payload bytes it holds against the connection's budget (0 unless it
        /// arrived compressed).
        var inflatedBytes = 0
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
