package import LongLinkTransport
internal import LongLinkWire

/// How a ``LongLinkServer`` listens, negotiates and limits its connections. Every value has a default.
public struct ServerConfiguration: Sendable {
    /// Where to listen. Port 0 lets the system choose (read it from ``LongLinkServer/localAddress``).
    public var endpoint: Endpoint = .tcp(host: "127.0.0.1", port: 0)
    /// The identity sent in `Welcome`. Defaults to a random id.
    public var serverID: String = "server-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    /// The heartbeat interval when the client proposes none.
    public var defaultHeartbeat: Duration = .seconds(15)
    /// The shortest heartbeat interval a client may ask for.
    public var minimumHeartbeat: Duration = .milliseconds(50)
    /// The longest heartbeat interval a client may ask for.
    public var maximumHeartbeat: Duration = .seconds(300)
    /// How long a new connection may take to send `Hello`.
    public var handshakeTimeout: Duration = .seconds(10)
    /// The largest frame body accepted, in bytes (advertised in `Welcome`).
    public var maxFrameBytes: Int = Frame.defaultMaxFrameBytes
    /// The most open connections; one more gets `GoAway(RESOURCE_EXHAUSTED, reconnect: true)`.
    public var maxConnections: Int = 10_000
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
    /// How long finished requests are remembered for de-duplication; `.zero` turns de-duplication off.
    public var dedupeWindow: Duration = .seconds(120)
    /// How many finished requests are remembered at most (oldest evicted first).
    public var dedupeCapacity: Int = 100_000
    /// How long graceful shutdown and `GoAway` wait for in-flight handlers before closing.
    public var drainTimeout: Duration = .seconds(5)
    /// How long the server waits after `retry_after_ms` it advertises on graceful shutdown.
    public var shutdownRetryAfter: Duration = .milliseconds(200)
    /// Run handlers on the connection's event loop (no thread hop for quick handlers). Handlers
    /// must then not block; set to false for handlers that do heavy synchronous work.
    public var runsHandlersOnEventLoop: Bool = true
    /// Socket options for accepted connections.
    public var connectionOptions: ConnectionOptions = .init()
    /// The event loops that serve connections; `nil` uses the process-wide shared group (one loop
    /// per core). Package API: the event loop is below what users see.
    package var eventLoopGroup: EventLoopGroup? = nil
    /// Reports the load (0 to 1000) sent in `Welcome` and `Pong`; `nil` reports open connections
    /// as a share of ``maxConnections``.
    public var loadReporter: (@Sendable () -> UInt32)? = nil

    /// The default configuration: loopback, a system-chosen port.
    public init() {}

    /// Checks the values; throws ``LongLinkError/Code-swift.struct/invalidConfiguration``.
    public func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: message)
        }
        if minimumHeartbeat <= .zero || minimumHeartbeat > maximumHeartbeat {
            throw fail("heartbeat bounds must satisfy 0 < minimum <= maximum")
        }
        if defaultHeartbeat < minimumHeartbeat || defaultHeartbeat > maximumHeartbeat {
            throw fail("defaultHeartbeat must lie within [minimumHeartbeat, maximumHeartbeat]")
        }
        if maxFrameBytes < 64 || maxFrameBytes > Int(UInt32.max) { throw fail("maxFrameBytes must be 64...UInt32.max") }
        if maxConnections < 1 { throw fail("maxConnections must be at least 1") }
        if maxInFlightPerConnection < 1 { throw fail("maxInFlightPerConnection must be at least 1") }
        if reliablePushWindow < 1 { throw fail("reliablePushWindow must be at least 1") }
        if reliablePushWindowTimeout <= .zero { throw fail("reliablePushWindowTimeout must be positive") }
        if dedupeWindow < .zero { throw fail("dedupeWindow must not be negative") }
        if dedupeCapacity < 1 { throw fail("dedupeCapacity must be at least 1") }
        if handshakeTimeout <= .zero { throw fail("handshakeTimeout must be positive") }
        if drainTimeout < .zero { throw fail("drainTimeout must not be negative") }
        if serverID.utf8.count > 128 { throw fail("serverID must be at most 128 bytes") }
    }
}
