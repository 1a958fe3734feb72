/// A snapshot of a server's counters.
public struct ServerStatistics: Sendable, Hashable {
    /// Connections open now.
    public var openConnections: Int = 0
    /// Connections accepted since start.
    public var acceptedConnections: Int = 0
    /// Connections turned away at the connection limit, and (with TLS) sockets closed at once
    /// because ``ServerConfiguration/maxPendingHandshakes`` or ``ServerConfiguration/maxConnections``
    /// left no place for their handshake.
    public var rejectedConnections: Int = 0
    /// Connections closed for breaking the protocol (malformed frames, wrong order, oversized frames).
    public var protocolViolations: Int = 0
    /// Connections closed for silence longer than three heartbeat intervals.
    public var idleClosures: Int = 0
    /// Times a connection stopped reading because its client did not read its replies.
    public var readPauses: Int = 0
    /// Requests received (including duplicates).
    public var requestsReceived: Int = 0
    /// Handler executions started.
    public var handlersStarted: Int = 0
    /// Handlers running now.
    public var handlersRunning: Int = 0
    /// Duplicate requests answered from the de-duplication window without running the handler.
    public var requestsReplayed: Int = 0
    /// Duplicate requests that joined a running execution.
    public var requestsJoined: Int = 0
    /// Requests the de-duplication window held now, running and finished.
    public var dedupeEntries: Int = 0
    /// Bytes of stored replies the de-duplication window held now (see
    /// ``StoreBudgets/dedupeBytes``).
    public var dedupeStoredBytes: Int = 0
    /// New requests answered `RESOURCE_EXHAUSTED` without running because a de-duplication budget
    /// was full and their client had none of its own finished requests left to give up (see
    /// ``StoreBudgets``).
    public var dedupeRefusals: Int = 0
    /// Replies too large for their client's de-duplication budgets, kept as a marker that answers
    /// their resends `RESOURCE_EXHAUSTED` (see ``StoreBudgets/dedupeBytesPerClient``).
    public var dedupeRepliesNotKept: Int = 0
    /// Responses written.
    public var responsesSent: Int = 0
    /// Requests refused because the connection had too many in flight.
    public var requestsRejected: Int = 0
    /// Handlers cancelled by the client's `Cancel`.
    public var requestsCancelled: Int = 0
    /// Handlers stopped by their `timeout_ms`.
    public var requestsTimedOut: Int = 0
    /// Reliable pushes stored.
    public var reliablePushesStored: Int = 0
    /// Reliable push frames written (redeliveries included).
    public var reliablePushesSent: Int = 0
    /// Best-effort push frames written.
    public var bestEffortPushesSent: Int = 0
    /// Best-effort pushes dropped because a connection was not writable.
    public var bestEffortPushesDropped: Int = 0
    /// Sequence numbers acknowledged by clients.
    public var acksReceived: Int = 0
    /// Times a connection's full push window opened again because no `Ack` freed room within
    /// ``ServerConfiguration/reliablePushWindowTimeout``.
    public var pushWindowsReopened: Int = 0
    /// Handlers kept running after their connection closed, for the client's resend to join
    /// (see ``ServerConfiguration/maxOrphanedExecutionsPerClient``).
    public var orphanedExecutions: Int = 0
    /// Handlers stopped when their connection closed because the orphan bounds were reached.
    public var orphansRefused: Int = 0
    /// TLS handshakes that failed or timed out (the connection never reached the server, and is
    /// not counted in ``acceptedConnections``).
    public var tlsHandshakeFailures: Int = 0
    /// TLS handshakes under way now (they count against ``ServerConfiguration/maxConnections``).
    public var tlsHandshakesPending: Int = 0
    /// Operations on the server's stores (``ServerStores``: a fleet's shared ones, a file) that
    /// failed: the store could not be reached or did not answer in time. Requests it refused were
    /// answered `UNAVAILABLE` (after their calls were made again within the deadline, see
    /// ``storeCallsRetried``); pushes it could not read are read again later.
    public var sharedStoreFailures: Int = 0
    /// Calls to the server's stores made again after a failure that passes (the store threw
    /// `unavailable`: a failover, a connection being made again): claims and waits of requests,
    /// while their deadline allowed, and reads and deletions of reliable pushes.
    public var storeCallsRetried: Int = 0
    /// Sessions ended because their principal logged in elsewhere with an exclusive binding
    /// (``RequestContext/bind(principal:exclusive:)``).
    public var sessionsReplaced: Int = 0
    /// Fleet requests answered `UNKNOWN` because the server running them stopped (its lease in the
    /// shared de-duplication window ended) before it answered; none of them ran again.
    public var outcomesUnknown: Int = 0
    /// Fleet requests this server ran whose claim in the shared de-duplication window was no longer
    /// its own when it stored the reply (the claim lapsed while this server could not renew it):
    /// the reply went to the caller but was not stored for resends. Each is also logged.
    public var claimsLost: Int = 0
    /// Sessions ended because their credential expired (``RequestContext/setCredentialLifetime(_:)``)
    /// before a refresh renewed it.
    public var credentialExpiries: Int = 0

    /// Session events dropped for a ``LongLinkServer/sessionEvents()`` reader that fell more than
    /// ``ServerConfiguration/sessionEventBuffer`` behind.
    public var sessionEventsDropped: Int = 0

    /// A zeroed snapshot.
    public init() {}
}
