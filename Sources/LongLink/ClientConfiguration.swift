public import LongLinkCore
public import LongLinkTransport
internal import LongLinkWire

/// Everything a ``LongLinkClient`` needs to know; every value but the endpoints has a default.
public struct ClientConfiguration: Sendable {
    /// The servers to connect to. With more than one, the client probes them all and connects to
    /// the best by round trip and reported load (see ``balancing``).
    public var endpoints: [Endpoint]
    /// When set, asked for the server list at start, when every endpoint has failed, every
    /// ``Balancing/refreshInterval`` and after ``LongLinkClient/networkDidChange()`` (for example
    /// from a configuration service); ``endpoints`` is the fallback when it throws or returns nothing.
    public var endpointProvider: (@Sendable () async throws -> [Endpoint])?
    /// How the client chooses among the endpoints, bans failing ones and migrates to better ones.
    public var balancing: Balancing = .init()
    /// The client's identity. The server de-duplicates resent requests per (client id, request id),
    /// so an app that wants de-duplication across launches supplies a stable id.
    public var clientID: String = "client-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    /// The timeout of a request that does not set its own. It covers queueing while offline,
    /// reconnects and resends.
    public var defaultTimeout: Duration = .seconds(10)
    /// How deadlines are enforced: a task group racing each reply against its timeout (the default),
    /// or one deadline index for many requests in flight (see ``DeadlineStrategy``).
    public var deadlineStrategy: DeadlineStrategy = .taskGroup
    /// How long connecting may take, and then how long the Hello/Welcome exchange may take.
    public var connectTimeout: Duration = .seconds(5)
    /// The heartbeat interval proposed to the server. The server may shorten it (not below 1 s,
    /// unless the proposal is shorter) but never lengthen it. A link that receives nothing for two
    /// intervals is declared dead and replaced.
    public var heartbeat: Duration = .seconds(15)
    /// The reconnection backoff.
    public var backoff: Backoff = .init()
    /// The most requests that may wait while the link is down; one more fails at once with
    /// ``LongLinkError/Code-swift.struct/resourceExhausted``.
    public var offlineQueueLimit: Int = 1_000
    /// The most payload bytes of requests that may wait for the link (down, logged out, or not
    /// reading what the client writes); a request that would go past it fails at once with
    /// ``LongLinkError/Code-swift.struct/resourceExhausted``. A request always fits an empty queue.
    public var offlineQueueBytes: Int = 16 << 20
    /// The largest frame accepted from the server: 64 bytes to 64 MiB. The `Welcome` it sends
    /// may carry at most 128 metadata entries of 64 KiB in all; a larger one is a protocol
    /// violation.
    public var maxFrameBytes: Int = Frame.defaultMaxFrameBytes
    /// The upper bound of ``maxFrameBytes``.
    public static let maxFrameBytesLimit = 64 << 20
    /// The login step, run after every connect before queued requests are released. It makes
    /// requests through the ``LoginSession`` it is given. Throwing an error with code
    /// ``LongLinkError/Code-swift.struct/unauthenticated`` ends the session for good. Without one,
    /// calls are made before any login, which a server does not de-duplicate: a call whose link
    /// drops after it was written is then resent only when idempotent.
    public var login: (@Sendable (LoginSession) async throws -> Void)?
    /// Credentials with a lifetime: the app's provider, and the refresh on the live link before they
    /// expire (see ``CredentialRefresh``). The login step takes its credential from
    /// ``LoginSession/credential()``. Nil (the default): the client knows nothing of expiries.
    public var credentials: CredentialRefresh?
    /// What ``LongLinkClient/run()`` does when a session ends for good (`GoAway` without reconnect,
    /// a rejected login, ``LongLinkClient/logout(reason:)``). False (the default): it stops and
    /// throws the reason. True: it stays, waiting for ``LongLinkClient/login(_:)`` to start the
    /// next session with new credentials on the same client, or for a shutdown.
    public var waitsForLoginAfterSessionEnd = false
    /// Requests replayed after every login, failover and migration (subscriptions the server
    /// forgets when a link drops): the static case of ``LongLinkClient/subscribe(_:timeout:)``,
    /// replayed first, in this order, and never ended.
    public var subscriptions: [Subscription] = []
    /// Metadata sent in `Hello` (app version, platform). Never credentials.
    public var metadata: [String: String] = [:]
    /// The most pushes held for one consumer (or, before any consumer exists, for all) before the
    /// client stops accepting reliable pushes until the consumer catches up (see the pushes guide).
    public var pushBufferLimit: Int = 10_000
    /// The most payload bytes of pushes held for one consumer (or, before any consumer exists, for
    /// all); past it, a push is treated as past ``pushBufferLimit``: reliable pushes are left with
    /// the server until the consumer catches up, best-effort pushes are dropped. A push always fits
    /// an empty buffer.
    public var pushBufferBytes: Int = 64 << 20
    /// The most reliable pushes one stream that acknowledges after processing
    /// (``PushAcknowledgement/afterProcessing``) holds in its buffer and in the app's hands,
    /// unacknowledged, together; past it, reliable pushes are left with the server until the app
    /// acknowledges some, as past ``pushBufferLimit``.
    public var unacknowledgedPushLimit: Int = 1_000
    /// The most payload bytes of reliable pushes one stream that acknowledges after processing
    /// holds in its buffer and in the app's hands, unacknowledged, together; past it, reliable
    /// pushes are left with the server until the app acknowledges some, as past
    /// ``unacknowledgedPushLimit``. A push always fits when the stream holds none.
    public var unacknowledgedPushBytes: Int = 64 << 20
    /// How a consumer that is behind conflates best-effort pushes: a best-effort push takes the place
    /// of the untaken one with the same key in the consumer's buffer, so the app reads the latest
    /// of each key (the latest price of each symbol) instead of a backlog. By topic by default;
    /// ``PushConflation/disabled`` keeps every best-effort push while there is room. Reliable pushes
    /// are never conflated. ``LongLinkClient/pushes(topic:conflation:)`` sets it per stream.
    public var pushConflation: PushConflation = .byTopic
    /// The most calls that may wait on requests shared by coalescing (``RequestOptions/coalesces``)
    /// at once, in all; one more fails at once with
    /// ``LongLinkError/Code-swift.struct/resourceExhausted``. No waiting call is touched.
    public var coalescedCallLimit: Int = 10_000
    /// The most bytes (keys and payloads) the shared requests of coalesced calls hold; a call that
    /// would start one more past it fails at once with
    /// ``LongLinkError/Code-swift.struct/resourceExhausted`` (joining a shared request in flight
    /// costs nothing). One always fits when none is in flight.
    public var coalescedCallBytes: Int = 16 << 20
    /// What becomes of a reliable push that a skipping typed stream
    /// (``LongLinkClient/pushes(topic:as:)-4gdwt``) could not decode: nil (the default)
    /// acknowledges it (a dead letter: the server forgets it, since sending it again would not
    /// make it decode), after ``undecodablePushHandler`` saw it. Set it to decide per push with
    /// ``UndecodablePushDisposition``, for example to leave pushes of a topic an update of the app
    /// will decode with the server. Called on the consuming task, after the handler.
    public var undecodablePushDisposition: (@Sendable (Push, any Error) -> UndecodablePushDisposition)?
    /// The longest an acknowledgement waits to be batched with others.
    public var ackDelay: Duration = .milliseconds(5)
    /// The most seqs in one `Ack`.
    public var ackBatchSize: Int = 256
    /// How the client behaves while the app is in the background.
    public var background: BackgroundPolicy = .init()
    /// After coming to the foreground or a network change, how long the link may stay silent after
    /// a `Ping` before it is replaced.
    public var livenessProbeTimeout: Duration = .seconds(2)
    /// How long ``LongLinkClient/shutdown()`` waits for requests in flight.
    public var shutdownGracePeriod: Duration = .seconds(5)
    /// The time source (inject a manual clock in tests).
    public var clock: any LongLinkClock = SystemClock()
    /// The event loops to use; `nil` uses the process-wide shared group (one loop per core). For the
    /// testing kit and the benchmarks only: the event loop is below what users see.
    @_spi(Benchmarks) public var eventLoopGroup: EventLoopGroup? = nil
    /// Socket options for connections.
    public var connectionOptions: ConnectionOptions = .init()
    /// TLS for every connection; `nil` (the default) connects in plain TCP. The handshake runs
    /// within ``connectTimeout``; a failure is a ``LongLinkError/Code-swift.struct/tlsFailure``
    /// error whose ``LongLinkError/underlying`` cause is a ``TLSFailure``, and the client retries
    /// with backoff as after any failed connect. A configuration OpenSSL rejects (an unreadable
    /// file, a key that is not the certificate's) stops ``LongLinkClient/run()`` with
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration``.
    public var tls: TLSConfiguration?
    /// zlib compression of payloads, offered to the server in `Hello` and used once its `Welcome`
    /// agrees (see `PayloadCompression`). Off by default. Compressed replies and pushes inflate to
    /// at most ``maxFrameBytes`` and at most ``maxInflationRatio`` times their size (any payload
    /// may inflate to 64 KiB); inflating stops at the bound, and the reply or push fails with
    /// ``LongLinkError/Code-swift.struct/compressionFailed``. The link stays.
    public var compression: PayloadCompression = .disabled
    /// The most bytes a compressed reply or push may inflate to per byte it was sent (64: 1:64).
    public var maxInflationRatio: Int = 64
    /// The response cache's size, persistence, and invalidation by pushes.
    public var responseCache: ResponseCacheConfiguration = .init()
    /// The codec of typed requests and pushes.
    public var codec: any PayloadCodec = JSONPayloadCodec()
    /// Receives every push a typed stream (``LongLinkClient/pushes(topic:as:)-4gdwt``,
    /// ``LongLinkClient/throwingPushes(topic:as:)-1cjs0``) took but could not decode, with the codec's
    /// error: the app's last chance to keep it (a reliable one is then acknowledged, unless
    /// ``undecodablePushDisposition`` says to leave it with the server). Called on the consuming
    /// task; such pushes are also logged (topic and seq, never the payload) and counted in
    /// ``ClientStatistics/undecodablePushes``.
    public var undecodablePushHandler: (@Sendable (Push, any Error) -> Void)?
    /// Receives the client's log records: a level, a message and metadata, as swift-log's
    /// `LogHandler` takes them (the logging guide shows a five-line adapter). Records never contain
    /// payloads or credentials. Called on the client's event loop: it must not block.
    public var logger: (@Sendable (LogRecord) -> Void)?
    /// Where the client reports its metrics (``PrometheusMetrics``, or a bridge to swift-metrics);
    /// `nil` (the default) reports none and costs nothing. Calls are timed and counted by method
    /// and status as they end; the ``ClientStatistics`` figures are reported every
    /// ``metricsInterval`` while ``LongLinkClient/run()`` runs, and on
    /// ``LongLinkClient/reportMetrics()``.
    public var metrics: (any MetricsSink)?
    /// How often the ``ClientStatistics`` figures go to ``metrics``.
    public var metricsInterval: Duration = .seconds(10)
    /// What runs around every call, in order: the first sees each call first (see
    /// ``ClientInterceptor``).
    public var interceptors: [any ClientInterceptor] = []

    /// A configuration for the given servers.
    public init(endpoints: [Endpoint]) {
        self.endpoints = endpoints
    }

    /// Checks the values; throws ``LongLinkError/Code-swift.struct/invalidConfiguration``.
    public func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: message)
        }
        if endpoints.isEmpty && endpointProvider == nil { throw fail("no endpoints and no endpoint provider") }
        if clientID.isEmpty || clientID.utf8.count > 128 { throw fail("clientID must be 1 to 128 bytes") }
        if defaultTimeout <= .zero { throw fail("defaultTimeout must be positive") }
        if metricsInterval <= .zero { throw fail("metricsInterval must be positive") }
        if connectTimeout <= .zero { throw fail("connectTimeout must be positive") }
        if heartbeat < .milliseconds(10) { throw fail("heartbeat must be at least 10 ms") }
        if backoff.initial < .zero || backoff.maximum < backoff.initial || backoff.multiplier < 1 {
            throw fail("backoff must satisfy 0 <= initial <= maximum and multiplier >= 1")
        }
        if let credentials, credentials.method.isEmpty || credentials.lead < .zero || credentials.timeout <= .zero {
            throw fail("credentials need a method, a lead of at least 0 and a positive timeout")
        }
        if offlineQueueLimit < 1 { throw fail("offlineQueueLimit must be at least 1") }
        if offlineQueueBytes < 1 { throw fail("offlineQueueBytes must be at least 1") }
        if maxFrameBytes < 64 || maxFrameBytes > Self.maxFrameBytesLimit {
            throw fail("maxFrameBytes must be 64 bytes to 64 MiB")
        }
        if maxInflationRatio < 1 { throw fail("maxInflationRatio must be at least 1") }
        if pushBufferLimit < 1 { throw fail("pushBufferLimit must be at least 1") }
        if pushBufferBytes < 1 { throw fail("pushBufferBytes must be at least 1") }
        if unacknowledgedPushLimit < 1 { throw fail("unacknowledgedPushLimit must be at least 1") }
        if unacknowledgedPushBytes < 1 { throw fail("unacknowledgedPushBytes must be at least 1") }
        if coalescedCallLimit < 1 || coalescedCallBytes < 1 {
            throw fail("coalescedCallLimit and coalescedCallBytes must be at least 1")
        }
        if responseCache.maxBytes < 0 || responseCache.maxEntries < 1 {
            throw fail("responseCache.maxBytes must not be negative and responseCache.maxEntries must be at least 1")
        }
        if ackDelay < .zero || ackBatchSize < 1 { throw fail("ackDelay must not be negative and ackBatchSize >= 1") }
        if livenessProbeTimeout <= .zero { throw fail("livenessProbeTimeout must be positive") }
        try balancing.validate()
        if background.heartbeatMultiplier < 1 || background.heartbeatMultiplier > 2 {
            throw fail("background.heartbeatMultiplier must be 1 or 2 (the server closes links silent for 3 intervals)")
        }
    }
}

/// How the client behaves while the app is in the background (mobile platforms suspend sockets and
/// timers there; a link that looks alive may be dead when the app comes back).
public struct BackgroundPolicy: Sendable, Hashable {
    /// Heartbeats are this many times slower in the background (fewer wake-ups). At most 2: the
    /// server closes a link it has heard nothing from for three intervals.
    public var heartbeatMultiplier: Int = 2
    /// Whether reconnection attempts wait until the app is in the foreground again.
    public var pausesReconnection: Bool = true

    /// The default policy: heartbeats 2x slower, reconnection paused.
    public init(heartbeatMultiplier: Int = 2, pausesReconnection: Bool = true) {
        self.heartbeatMultiplier = heartbeatMultiplier
        self.pausesReconnection = pausesReconnection
    }
}

/// A request by method and payload: one replayed after every login, such as a subscription the
/// server keeps per connection, or the leave request of a run-time subscription.
public struct Subscription: Sendable, Hashable {
    /// The method to call.
    public var method: String
    /// Its payload.
    public var payload: [UInt8]

    /// Creates a subscription request.
    public init(method: String, payload: [UInt8] = []) {
        self.method = method
        self.payload = payload
    }

    /// A subscription made of a typed request: its method, and its payload encoded with `codec`
    /// (use the codec the configuration names, ``ClientConfiguration/codec``; JSON by default).
    ///
    /// ```swift
    /// configuration.subscriptions = [try Subscription(WatchQuotes(symbols: ["AAPL"]))]
    /// ```
    /// - Throws: ``LongLinkError/Code-swift.struct/invalidArgument`` when the request does not encode.
    public init<Request: LongLinkRequest>(_ request: Request, codec: any PayloadCodec = JSONPayloadCodec()) throws {
        do {
            self.init(method: Request.method, payload: try request.encodePayload(with: codec))
        } catch {
            throw LongLinkError(
                code: .invalidArgument, message: "subscription \(Request.method) does not encode",
                underlying: error)
        }
    }
}

/// Per-call settings.
public struct RequestOptions: Sendable {
    /// The call's timeout; `nil` uses ``ClientConfiguration/defaultTimeout``.
    public var timeout: Duration?
    /// Whether the call may be sent again after a link drop even when the server offers no
    /// de-duplication for it (none at all, or the call was made before a login): true only for
    /// calls that are safe to run twice.
    public var idempotent: Bool
    /// Metadata sent with the request.
    public var metadata: [String: String]
    /// Whether the call reads and fills the client's ``ResponseCache`` (``CachePolicy/networkOnly``,
    /// the default, does neither).
    public var cache: CachePolicy = .networkOnly
    /// The call's key in the cache and for coalescing, in place of the method and payload: the
    /// live-room app's "fixed request ids". The `request_id` on the wire stays unique.
    public var cacheKey: String?
    /// Whether the call shares one request on the wire with identical calls (same key, same
    /// principal) in flight at the same time. Off by default: only for calls that are safe to
    /// answer once for several callers (reads). Each caller keeps its own deadline; the shared
    /// request is cancelled only when its last caller gave up.
    public var coalesces: Bool = false

    /// Creates options.
    public init(timeout: Duration? = nil, idempotent: Bool = false, metadata: [String: String] = [:]) {
        self.timeout = timeout
        self.idempotent = idempotent
        self.metadata = metadata
    }
}
