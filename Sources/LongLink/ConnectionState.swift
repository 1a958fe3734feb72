internal import LongLinkTransport
internal import LongLinkWire

/// Where the client's link stands, with the reason for the last change.
public struct ConnectionState: Sendable, CustomStringConvertible {
    /// The phases of the supervisor.
    public enum Phase: Sendable, Hashable {
        /// `run()` has not started.
        case idle
        /// Opening a connection and exchanging Hello/Welcome.
        case connecting
        /// Connected; running the login step, subscriptions and `Sync`. Requests still queue.
        case loggingIn
        /// Ready: requests flow.
        case connected
        /// Waiting before the next attempt.
        case waitingToReconnect
        /// Stopped for good (shut down or a terminal error).
        case stopped
    }

    /// The phase.
    public var phase: Phase
    /// The endpoint concerned, if any.
    public var endpoint: Endpoint?
    /// Why the state changed, for people: the client's own are `not started`, `connecting`,
    /// `reconnecting`, `attempt failed: CAUSE`, `handshake done; logging in`, `logged in to server ID`,
    /// `migrated to server ID`, `CAUSE` (a link lost: `waitingToReconnect`), `paused in the
    /// background`, `logging in again`, `session ended: CAUSE; waiting for login`, `shut down`,
    /// `stopped: MESSAGE` (the error's message) and `invalid configuration`, where CAUSE is the
    /// ``cause``'s description (`reset by peer`, `heartbeat timeout`, `connection refused`, ...).
    public var reason: String
    /// The error that caused the change, if any.
    public var error: LongLinkError?
    /// Why the last link was lost or the last attempt failed, while the client is without a link
    /// (`connecting`, `waitingToReconnect`, `stopped`); nil before the first loss and once
    /// connected again. A shutdown, a cancelled `run()` and a logout are
    /// ``DisconnectCause/requestedByApp``.
    public var cause: DisconnectCause?
    /// When waiting to reconnect: how long.
    public var retryDelay: Duration?

    /// Creates a state.
    public init(
        phase: Phase, endpoint: Endpoint? = nil, reason: String, error: LongLinkError? = nil,
        retryDelay: Duration? = nil
    ) {
        self.phase = phase
        self.endpoint = endpoint
        self.reason = reason
        self.error = error
        self.retryDelay = retryDelay
    }

    /// The phase, the endpoint, the reason in parentheses and any wait, as the client prints them:
    /// for example `connected 127.0.0.1:7000 (logged in to server s1)` (the server's id from its
    /// `Welcome`), `waitingToReconnect 127.0.0.1:7000 (heartbeat timeout) retry in 400 ms` (the
    /// ``cause`` of the loss), `connecting 127.0.0.1:7000 (attempt failed: connection refused)`,
    /// `connecting 127.0.0.1:7000 (reconnecting)`, `stopped (shut down)`.
    public var description: String {
        var text = "\(phase)"
        if let endpoint { text += " \(endpoint)" }
        text += " (\(reason))"
        if let retryDelay {
            let milliseconds = Int((retryDelay.seconds * 1000).rounded())
            text += " retry in \(milliseconds) ms"
        }
        return text
    }
}

extension ConnectionState {
    /// A state with the cause of the last loss (the client's own states).
    init(
        phase: Phase, endpoint: Endpoint? = nil, reason: String, error: LongLinkError? = nil,
        retryDelay: Duration? = nil, cause: DisconnectCause?
    ) {
        self.init(phase: phase, endpoint: endpoint, reason: reason, error: error, retryDelay: retryDelay)
        self.cause = cause
    }
}

/// A snapshot of a client's counters.
public struct ClientStatistics: Sendable, Hashable {
    /// Requests waiting for a reply on the link now.
    public var inFlight: Int = 0
    /// Requests waiting for the link (offline queue).
    public var queued: Int = 0
    /// Payload bytes of the requests in the offline queue (bounded by ``ClientConfiguration/offlineQueueBytes``).
    public var queuedBytes: Int = 0
    /// Bytes written to the link and not yet taken by the kernel (bounded by the connection's high
    /// watermark plus one frame: past it, requests wait in the offline queue).
    public var writeBufferBytes: Int = 0
    /// Request frames written (resends included).
    public var requestsSent: Int = 0
    /// Requests answered with a reply (OK or an error status).
    public var repliesReceived: Int = 0
    /// Requests that failed with deadline exceeded (the client's timer, or the server's `timeout_ms` budget).
    public var timeouts: Int = 0
    /// Requests cancelled by their callers.
    public var cancellations: Int = 0
    /// Requests sent again after a reconnect.
    public var resends: Int = 0
    /// Replies with an id no caller waits for (late, duplicate or unknown), dropped.
    public var unknownReplies: Int = 0
    /// Links established (Welcome received).
    public var connects: Int = 0
    /// Links established after the first.
    public var reconnects: Int = 0
    /// Links declared dead by the heartbeat or a liveness probe.
    public var deadLinks: Int = 0
    /// Live migrations: the link moved to a better endpoint, make before break.
    public var migrations: Int = 0
    /// Endpoint probes made (one per endpoint probed), before connecting and while connected.
    public var probes: Int = 0
    /// Connections to endpoints that failed (refused, timed out, no `Welcome`, login failed).
    public var failedConnects: Int = 0
    /// The last round trip measured by `Ping`/`Pong`.
    public var lastRoundTrip: Duration?
    /// Push frames received (redeliveries included).
    public var pushesReceived: Int = 0
    /// Reliable pushes taken: handed to the app, or, undecodable, to its handler or the dead-letter
    /// path (see ``deadLetterPushes``).
    public var pushesDelivered: Int = 0
    /// Reliable pushes received again after the app had them, dropped (and acknowledged again).
    public var duplicatePushesDropped: Int = 0
    /// Best-effort pushes dropped because the consumer was behind or absent.
    public var bestEffortPushesDropped: Int = 0
    /// Best-effort pushes that took the place of an older one of the same conflation key in a
    /// consumer's buffer (the older one is gone; see ``ClientConfiguration/pushConflation``).
    public var bestEffortPushesConflated: Int = 0
    /// Reliable pushes left unacknowledged with the server, to come again after `Sync`: refused
    /// because a consumer's buffer was full, not held for want of a consumer, or sent before the
    /// server read a `Sync` the client sent on a link already receiving them.
    public var reliablePushesDeferred: Int = 0
    /// Seqs acknowledged to the server.
    public var acksSent: Int = 0
    /// Compressed replies and pushes that did not inflate (corrupt, or past
    /// ``ClientConfiguration/maxFrameBytes``): the reply fails, the push reaches typed streams as
    /// undecodable.
    public var compressionFailures: Int = 0
    /// Pushes a typed stream took but could not decode (see ``ClientConfiguration/undecodablePushHandler``).
    public var undecodablePushes: Int = 0
    /// Reliable pushes a skipping typed stream could not decode and acknowledged without handing
    /// them over (dead letters; see ``UndecodablePushDisposition``).
    public var deadLetterPushes: Int = 0
    /// Acknowledgements never sent because the next link's server numbers pushes in another seq
    /// space (another epoch: a restarted store, another principal), where those seqs mean other pushes.
    public var staleAcksDropped: Int = 0

    /// A zeroed snapshot.
    public init() {}
}
