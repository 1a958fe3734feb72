public import LongLinkServer
package import LongLinkTransport

/// Where Redis is and how LongLink talks to it.
///
/// Every command has a timeout: when Redis does not answer in time (paused, overloaded, the
/// network gone), the operation fails with ``LongLinkError/Code-swift.struct/unavailable`` and
/// the connection is closed and opened again for the next command. After a failed connection
/// attempt the next one waits a backoff that doubles up to ``maximumReconnectDelay``; commands
/// in that time fail at once with `unavailable` (they fail closed rather than wait; a server makes
/// a request's store calls again within the request's deadline).
///
/// With ``tls`` the connection speaks TLS, verified as a client's (see `TLSConfiguration`). The
/// password never appears in ``description``, ``debugDescription`` or an error: it shows as `***`.
public struct RedisConfiguration: Sendable, Equatable {
    /// The host name or IP address.
    public var host: String = "127.0.0.1"
    /// The TCP port.
    public var port: Int = 6379
    /// The ACL user for `HELLO 3 AUTH`; nil with a password means `default`.
    public var username: String?
    /// The password for `HELLO 3 AUTH`; nil: no authentication.
    public var password: String?
    /// TLS to Redis (`rediss://`); nil: plain TCP. The server's certificate is verified against
    /// ``TLSConfiguration/trustRoots`` (the system's by default) and must name ``host``, or
    /// ``TLSConfiguration/serverHostname`` when set (which is then also sent as SNI).
    public var tls: TLSConfiguration?
    /// The logical database (`SELECT`); 0 by default.
    public var database: Int = 0
    /// Prepended to every key and channel name, so that several deployments share one Redis.
    public var keyPrefix: String = "longlink:"
    /// How long one command (or one pipelined batch) may wait for its reply.
    public var commandTimeout: Duration = .seconds(2)
    /// How long connecting and the `HELLO` handshake may take.
    public var connectTimeout: Duration = .seconds(2)
    /// The wait after the first failed connection attempt.
    public var initialReconnectDelay: Duration = .milliseconds(50)
    /// The longest wait between connection attempts.
    public var maximumReconnectDelay: Duration = .seconds(2)
    /// When the stores' writes count as done: on the primary (the default), or on replicas too.
    public var durability: RedisDurability = .asynchronous
    /// What one tenant may hold in the fleet's de-dup window (``RedisDedupeStore``): entries and
    /// bytes per client and per principal, by default as the server's in-memory window.
    public var dedupeBudgets = RedisDedupeBudgets()

    /// Redis on `host:port`.
    public init(host: String = "127.0.0.1", port: Int = 6379) {
        self.host = host
        self.port = port
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless the values make sense.
    public func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError { LongLinkError(code: .invalidConfiguration, message: message) }
        guard !host.isEmpty else { throw fail("the Redis host is empty") }
        guard (1...65535).contains(port) else { throw fail("the Redis port \(port) is outside 1...65535") }
        guard database >= 0 else { throw fail("the Redis database must not be negative") }
        guard durability.replicas >= 0 else { throw fail("Redis durability must not ask for a negative replica count") }
        guard commandTimeout > .zero, connectTimeout > .zero else { throw fail("Redis timeouts must be positive") }
        guard initialReconnectDelay >= .zero, maximumReconnectDelay >= initialReconnectDelay else {
            throw fail("Redis reconnect delays must satisfy 0 <= initial <= maximum")
        }
        try dedupeBudgets.validate()
        // Loads the trust roots and any client certificate now, so a missing CA file is said at
        // start, not at the first command.
        if let tls { _ = try TLSContext(client: tls) }
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless `seeds` names at
    /// least one node and every seed is valid.
    public static func validate(cluster seeds: [RedisConfiguration]) throws(LongLinkError) {
        guard !seeds.isEmpty else {
            throw LongLinkError(code: .invalidConfiguration, message: "a Redis cluster needs at least one seed node")
        }
        for seed in seeds { try seed.validate() }
    }
}
