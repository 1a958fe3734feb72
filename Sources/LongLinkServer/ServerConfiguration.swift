public import LongLinkCore
public import LongLinkTransport
internal import LongLinkWire

/// How a ``LongLinkServer`` listens, negotiates and limits its connections. Every value has a default.
public struct ServerConfiguration: Sendable {
    /// Where to listen. Port 0 lets the system choose (read it from ``LongLinkServer/localAddress``).
    public var endpoint: Endpoint = .tcp(host: "127.0.0.1", port: 0)
    /// The identity sent in `Welcome`. Defaults to a random id.
    public var serverID: String = "server-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) {
        didSet { serverIDIsDefault = false }
    }
    /// True until ``serverID`` is assigned: the test harness then gives each of its instances an id of its own.
    package private(set) var serverIDIsDefault = true
    /// The heartbeat interval when the client proposes none.
    public var defaultHeartbeat: Duration = .seconds(15)
    /// The shortest heartbeat interval a client may ask for.
    public var minimumHeartbeat: Duration = .milliseconds(50)
    /// The longest heartbeat interval a client may ask for.
    public var maximumHeartbeat: Duration = .seconds(300)
    /// How long a new connection may take to send `Hello`.
    public var handshakeTimeout: Duration = .seconds(10)
    /// How long a frame may take to arrive once its first byte has: a connection holding a
    /// partial frame for longer (a client trickling bytes, each of which counts as life for the
    /// heartbeat) gets `GoAway(DEADLINE_EXCEEDED, reconnect: true)` and is closed. Measured from
    /// the first byte of the oldest frame still incomplete when the timer is armed, so a frame
    /// may take up to twice this while frames before it complete; time the server spends not
    /// reading (the client does not read its replies) does not count.
    public var partialFrameTimeout: Duration = .seconds(30)
    /// The most entries a `metadata` map (of `Hello` or `Request`) may hold; a frame with more is a
    /// protocol error (`GoAway(RESOURCE_EXHAUSTED)`), detected while decoding.
    public var maxMetadataEntries: Int = 128
    /// The most bytes of keys and values, together, a `metadata` map (of `Hello` or `Request`) may
    /// hold; a frame with more is a protocol error (`GoAway(RESOURCE_EXHAUSTED)`), detected while
    /// decoding.
    public var maxMetadataBytes: Int = 64 << 10
    /// The most seqs one `Ack` may carry; a frame with more is a protocol error
    /// (`GoAway(RESOURCE_EXHAUSTED)`), detected before its seqs are decoded. Clients send larger
    /// batches as several `Ack`s.
    public var maxAckSeqs: Int = Frame.maxAckSeqs
    /// The largest frame body accepted, in bytes (advertised in `Welcome`).
    public var maxFrameBytes: Int = Frame.defaultMaxFrameBytes
    /// The largest frame body, in bytes, the server sends to a client: a push or a reply. Clients
    /// do not announce their limit and read 4 MiB unless configured otherwise, so a larger frame
    /// would make the client drop the link and receive it again, for ever.
    /// ``LongLinkServer/push(to:topic:payload:)`` refuses a larger push with
    /// ``LongLinkError/Code-swift.struct/invalidArgument`` instead, a best-effort push that large is
    /// dropped (counted in ``ServerStatistics/bestEffortPushesDropped``), and a larger reply is
    /// replaced by `RESOURCE_EXHAUSTED`.
    public var maxOutgoingFrameBytes: Int = Frame.defaultMaxFrameBytes
    /// The former name of ``maxOutgoingFrameBytes``, which limits replies as well as pushes.
    @available(*, deprecated, renamed: "maxOutgoingFrameBytes")
    public var maxPushFrameBytes: Int {
        get { maxOutgoingFrameBytes }
        set { maxOutgoingFrameBytes = newValue }
    }
    /// zlib compression of payloads: with it on (the default), a client that offers compression in
    /// its `Hello` is told yes in `Welcome`; the server then inflates the compressed requests it
    /// admits and compresses replies and pushes of at least `PayloadCompression/minimumBytes` for
    /// that client. A client that does not offer it gets nothing compressed.
    ///
    /// A compressed request is inflated only once the session admitted it (its id, its method, the
    /// in-flight limit), and only up to ``maxFrameBytes``, ``maxInflationRatio`` times its size and
    /// what is left of ``maxInflatedBytesPerConnection``: inflating stops at the first bound passed,
    /// and the request is answered `RESOURCE_EXHAUSTED` (a corrupt payload `INVALID_ARGUMENT`); the
    /// connection stays.
    public var compression: PayloadCompression = .zlib()
    /// The codec of the shared contract's types, JSON by default as the client's is: requests
    /// routed by their type (`router.register(EnterRoom.self) { … }`) and their replies, and the
    /// messages of typed topics (`server.publish(Alerts.self, alert, to: user)`). Give the client's
    /// `ClientConfiguration.codec` the same one.
    public var codec: any PayloadCodec = JSONPayloadCodec()
    /// The most bytes a compressed request may inflate to per byte it was sent (64: 1:64). Any
    /// payload may inflate to 64 KiB whatever its ratio.
    public var maxInflationRatio: Int = 64
    /// The most inflated payload bytes the requests in flight on one connection may hold: a
    /// compressed request holds its inflated size from its admission until it is answered,
    /// cancelled or timed out. One that would pass it is answered `RESOURCE_EXHAUSTED`.
    public var maxInflatedBytesPerConnection: Int = 64 << 20
    /// The most open connections; one more gets `GoAway(RESOURCE_EXHAUSTED, reconnect: true)`.
    /// With ``tls``, handshakes under way count too, and a socket that finds no place for its
    /// handshake is closed at once (it has no TLS to carry a `GoAway`).
    public var maxConnections: Int = 10_000
    /// With ``tls``: the most handshakes under way at once. Each holds a descriptor and an SSL
    /// object for up to ``ServerTLSConfiguration/handshakeTimeout``, so silent sockets could
    /// otherwise pile up; past this, a new socket is closed at once.
    public var maxPendingHandshakes: Int = 256
    /// The most requests running or waiting per connection; one more is answered `RESOURCE_EXHAUSTED`.
    public var maxInFlightPerConnection: Int = 1_024
    /// The most reliable pushes a connection keeps sent and not yet acknowledged. When that many
    /// are outstanding the connection sends no more until an `Ack` frees room (or
    /// ``reliablePushWindowTimeout`` passes without one), so a client that acknowledges what its
    /// application takes is not sent more than it can hold: clients should buffer at least this
    /// many pushes (LongLink's client holds 10,000 per consumer by default and acknowledges every
    /// 256 or 5 ms). A `Sync` or a new login starts the count afresh, and so does every new
    /// connection.
    public var reliablePushWindow: Int = 8_192
    /// How long a full ``reliablePushWindow`` waits for an `Ack` that frees room before the
    /// connection sends another window's worth anyway. A client may keep pushes unacknowledged
    /// indefinitely (LongLink's client holds those of a topic nobody reads yet); without this,
    /// enough of them would stop every other topic. A client that acknowledges something within
    /// this time keeps the window in force.
    public var reliablePushWindowTimeout: Duration = .milliseconds(100)
    /// How long finished requests are remembered for de-duplication; `.zero` turns de-duplication
    /// off. Only requests of a connection bound to a principal (by a login) are de-duplicated:
    /// before a login a client is anyone, so its requests run as sent and are never remembered.
    public var dedupeWindow: Duration = .seconds(120)
    /// What the server's own stores (the default ``InMemoryPushStore`` and the de-duplication
    /// window in its memory) let each tenant hold: unacknowledged reliable pushes per principal,
    /// past which ``LongLinkServer/push(to:topic:payload:)`` throws `RESOURCE_EXHAUSTED`, and
    /// de-dup entries and stored reply bytes (payloads uncompressed, status messages) per client,
    /// per principal and in all (see ``StoreBudgets``). The push budgets are ignored when the
    /// server is given a store of its own; give a ``DurableStore`` the same with
    /// ``DurableStoreConfiguration/init(budgetsOf:)``.
    public var budgets = StoreBudgets()
    /// With de-duplication, a handler whose connection closes runs on, so that the client's resend
    /// on its next connection joins it instead of running it twice; it still ends at its
    /// request's deadline (`timeout_ms`). This bounds how many such handlers one `client_id`
    /// leaves behind: past it, the next one is cancelled when its connection closes. 0 cancels
    /// every handler whose connection closes.
    public var maxOrphanedExecutionsPerClient: Int = 1_024
    /// As ``maxOrphanedExecutionsPerClient``, for all clients together (client ids cost nothing
    /// to make up).
    public var maxOrphanedExecutions: Int = 16_384
    /// How long graceful shutdown and `GoAway` wait for in-flight handlers before closing.
    public var drainTimeout: Duration = .seconds(5)
    /// The time source of the connections' handshake, heartbeat, drain and push-window timers, and
    /// of the drain of a graceful shutdown (inject a manual clock in tests; request deadlines and
    /// the fleet's leases keep real time).
    public var clock: any LongLinkClock = SystemClock()
    /// How long the server waits after `retry_after_ms` it advertises on graceful shutdown.
    public var shutdownRetryAfter: Duration = .milliseconds(200)
    /// Run handlers on the connection's event loop (no thread hop for quick handlers). Handlers
    /// must then not block; set to false for handlers that do heavy synchronous work.
    public var runsHandlersOnEventLoop: Bool = true
    /// Socket options for accepted connections.
    public var connectionOptions: ConnectionOptions = .init()
    /// TLS for every accepted connection; `nil` (the default) serves plain TCP. A connection
    /// reaches the server only once its handshake is done; failed handshakes are counted in
    /// ``ServerStatistics/tlsHandshakeFailures``. Swap the certificate while running with
    /// ``LongLinkServer/reloadTLS(_:)``.
    public var tls: ServerTLSConfiguration?
    /// The event loops that serve connections; `nil` uses the process-wide shared group (one loop
    /// per core). For the testing kit and the benchmarks only: the event loop is below what users see.
    @_spi(Benchmarks) public var eventLoopGroup: EventLoopGroup? = nil
    /// Binds the endpoint's port with `SO_REUSEPORT`, beside the `ReservedPort` (LongLinkTransport)
    /// a test holds it with (a server a client dials before it starts, or restarted on its port).
    /// Tests only: another process of the same user could then listen on the port too.
    package var reusesPort = false
    /// Reports the load (0 to 1000) sent in `Welcome` and every `Pong`, which clients use to
    /// choose among servers; `nil` reports the largest of: open connections as a share of
    /// ``maxConnections``, running handlers as a share of ``handlersAtFullLoad``, and the busiest
    /// event loop's busy share over the last second.
    public var loadReporter: (@Sendable () -> UInt32)? = nil
    /// How many handlers running at once count as full load in the reported load (not a limit:
    /// ``maxInFlightPerConnection`` is).
    public var handlersAtFullLoad: Int = 10_000
    /// Receives a line for what an operator should see beyond one request's answer: today, a fleet
    /// request whose claim was lost before its reply could be stored (see
    /// ``ServerStatistics/claimsLost``). Called from any thread; nil: only counted.
    public var logger: (@Sendable (String) -> Void)? = nil
    /// Where the server reports its metrics (``PrometheusMetrics``, or a bridge to swift-metrics);
    /// `nil` (the default) reports none and costs nothing. Handlers are timed and counted by method
    /// and status as they end; the ``ServerStatistics`` figures are reported every
    /// ``metricsInterval`` and on ``LongLinkServer/reportMetrics()``.
    public var metrics: (any MetricsSink)? = nil
    /// The most events each stream of ``LongLinkServer/sessionEvents()`` buffers for a reader
    /// that is behind; past it the oldest are dropped (``ServerStatistics/sessionEventsDropped``).
    public var sessionEventBuffer: Int = 10_000
    /// How long a session stays in the fleet's presence (``LongLinkServer/presence(of:)``) after
    /// its server last renewed it: the server renews all its sessions every third of it, so the
    /// sessions of a server that crashed are reported ended within it. Only for a push store that
    /// shares presence (``PushStore/sharesPresence``); at least 30 ms.
    public var presenceLease: Duration = .seconds(30)
    /// How often the ``ServerStatistics`` figures go to ``metrics``.
    public var metricsInterval: Duration = .seconds(10)
    /// Called once per connection when it has closed, with the id its requests carried
    /// (``RequestContext/connectionID``), for state an app keeps per connection (a room's members,
    /// presence): forget it here. Called on the connection's event loop: keep it short. A handler
    /// still running for the connection may record state after this call; it can tell by
    /// ``RequestContext/isConnectionOpen`` read after recording, and forget it then.
    public var connectionClosed: (@Sendable (_ connectionID: UInt64) -> Void)? = nil

    // MARK: Sync replays

    /// The shortest time between two replays of one connection's unacknowledged reliable pushes
    /// (what a `Sync` asks for: every unacknowledged push again, from the first). The first `Sync`
    /// replays at once; a `Sync` while a replay is under way, or sooner than this after the last
    /// one began, is coalesced into one replay when both have passed, so that `Sync`s sent in a
    /// loop cost one backlog per interval, not one each. A `Sync` when no reliable push was sent
    /// since the last replay began is answered by nothing (that replay brings all there is).
    /// `.zero` still coalesces `Sync`s during a replay; at most 60 seconds, as a client that
    /// dropped pushes waits up to this long to get them again.
    public var syncReplayInterval: Duration = .seconds(1)

    /// The default configuration: loopback, a system-chosen port.
    public init() {}

    /// Checks the values; throws ``LongLinkError/Code-swift.struct/invalidConfiguration``.
    public func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: message)
        }
        if metricsInterval <= .zero { throw fail("metricsInterval must be positive") }
        if sessionEventBuffer < 1 { throw fail("sessionEventBuffer must be at least 1") }
        if presenceLease < .milliseconds(30) { throw fail("presenceLease must be at least 30 ms") }
        if minimumHeartbeat <= .zero || minimumHeartbeat > maximumHeartbeat {
            throw fail("heartbeat bounds must satisfy 0 < minimum <= maximum")
        }
        if defaultHeartbeat < minimumHeartbeat || defaultHeartbeat > maximumHeartbeat {
            throw fail("defaultHeartbeat must lie within [minimumHeartbeat, maximumHeartbeat]")
        }
        if maxFrameBytes < 64 || maxFrameBytes > Int(UInt32.max) { throw fail("maxFrameBytes must be 64...UInt32.max") }
        if maxOutgoingFrameBytes < 64 || maxOutgoingFrameBytes > Int(UInt32.max) {
            throw fail("maxOutgoingFrameBytes must be 64...UInt32.max")
        }
        try budgets.validate(in: "")
        if maxConnections < 1 { throw fail("maxConnections must be at least 1") }
        if maxPendingHandshakes < 1 { throw fail("maxPendingHandshakes must be at least 1") }
        if maxInflationRatio < 1 { throw fail("maxInflationRatio must be at least 1") }
        if maxInflatedBytesPerConnection < 0 { throw fail("maxInflatedBytesPerConnection must not be negative") }
        if maxInFlightPerConnection < 1 { throw fail("maxInFlightPerConnection must be at least 1") }
        if handlersAtFullLoad < 1 { throw fail("handlersAtFullLoad must be at least 1") }
        if reliablePushWindow < 1 { throw fail("reliablePushWindow must be at least 1") }
        if reliablePushWindowTimeout <= .zero { throw fail("reliablePushWindowTimeout must be positive") }
        if dedupeWindow < .zero { throw fail("dedupeWindow must not be negative") }
        if maxOrphanedExecutionsPerClient < 0 { throw fail("maxOrphanedExecutionsPerClient must not be negative") }
        if maxOrphanedExecutions < 0 { throw fail("maxOrphanedExecutions must not be negative") }
        if handshakeTimeout <= .zero { throw fail("handshakeTimeout must be positive") }
        if partialFrameTimeout <= .zero { throw fail("partialFrameTimeout must be positive") }
        if maxMetadataEntries < 0 { throw fail("maxMetadataEntries must not be negative") }
        if maxMetadataBytes < 0 { throw fail("maxMetadataBytes must not be negative") }
        if maxAckSeqs < 1 { throw fail("maxAckSeqs must be at least 1") }
        if drainTimeout < .zero { throw fail("drainTimeout must not be negative") }
        if serverID.utf8.count > 128 { throw fail("serverID must be at most 128 bytes") }
        if syncReplayInterval < .zero || syncReplayInterval > .seconds(60) {
            throw fail("syncReplayInterval must be 0...60 seconds")
        }
    }
}
