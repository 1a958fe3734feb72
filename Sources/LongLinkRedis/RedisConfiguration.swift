public import LongLinkServer

/// Where Redis is and how LongLink talks to it.
///
/// Every command has a timeout: when Redis does not answer in time (paused, overloaded, the
/// network gone), the operation fails with ``LongLinkError/Code-swift.struct/unavailable`` and
/// the connection is closed and opened again for the next command. After a failed connection
/// attempt the next one waits a backoff that doubles up to ``maximumReconnectDelay``; commands
/// in that time fail at once with `unavailable` (they fail closed rather than wait).
public struct RedisConfiguration: Sendable, Equatable {
    /// The host name or IP address.
    public var host: String = "127.0.0.1"
    /// The TCP port.
    public var port: Int = 6379
    /// The ACL user for `HELLO 3 AUTH`; nil with a password means `default`.
    public var username: String?
    /// The password for `HELLO 3 AUTH`; nil: no authentication.
    public var password: String?
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

    /// Redis on `host:port`.
    public init(host: String = "127.0.0.1", port: Int = 6379) {
        self.host = host
        self.port = port
    }

    /// Parses `redis://[[user]:password@]HOST[:PORT][/DB]` (port 6379 and database 0 when left out;
    /// an IPv6 host in brackets). User and password may be percent-encoded.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for another scheme, a
    /// missing host, or a port or database that is not a number in range.
    public init(url: String) throws(LongLinkError) {
        func fail(_ why: String) -> LongLinkError {
            LongLinkError(
                code: .invalidConfiguration,
                message: "bad Redis URL (\(why)); expected redis://[user:pass@]HOST:PORT[/DB]")
        }
        guard url.hasPrefix("redis://") else { throw fail("not redis://") }
        var rest = Substring(url.dropFirst("redis://".count))
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let user = String(credentials[..<colon])
                username = user.isEmpty ? nil : try Self.percentDecoded(user, fail)
                password = try Self.percentDecoded(String(credentials[credentials.index(after: colon)...]), fail)
            } else {
                // redis://secret@host: a password alone, as redis-cli reads it.
                password = try Self.percentDecoded(String(credentials), fail)
            }
        }
        if let slash = rest.firstIndex(of: "/") {
            let db = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !db.isEmpty {
                guard let number = Int(db), number >= 0 else { throw fail("database \(db)") }
                database = number
            }
        }
        var hostPart = rest
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw fail("unclosed [") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            hostPart = rest[rest.index(after: close)...]
            if !hostPart.isEmpty {
                guard hostPart.hasPrefix(":") else { throw fail("text after ]") }
                port = try Self.port(hostPart.dropFirst(), fail)
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = String(rest[..<colon])
            port = try Self.port(rest[rest.index(after: colon)...], fail)
        } else {
            host = String(rest)
        }
        guard !host.isEmpty else { throw fail("no host") }
    }

    private static func port(_ text: Substring, _ fail: (String) -> LongLinkError) throws(LongLinkError) -> Int {
        guard let port = Int(text), (1...65535).contains(port) else { throw fail("port \(text)") }
        return port
    }

    private static func percentDecoded(_ text: String, _ fail: (String) -> LongLinkError) throws(LongLinkError)
        -> String
    {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let high = utf8.index(after: index)
                guard high < utf8.endIndex, utf8.index(after: high) < utf8.endIndex,
                    let value = UInt8(String(decoding: utf8[high...utf8.index(after: high)], as: UTF8.self), radix: 16)
                else { throw fail("bad percent escape") }
                bytes.append(value)
                index = utf8.index(high, offsetBy: 2)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless the values make sense.
    public func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError { LongLinkError(code: .invalidConfiguration, message: message) }
        guard !host.isEmpty else { throw fail("the Redis host is empty") }
        guard (1...65535).contains(port) else { throw fail("the Redis port \(port) is outside 1...65535") }
        guard database >= 0 else { throw fail("the Redis database must not be negative") }
        guard commandTimeout > .zero, connectTimeout > .zero else { throw fail("Redis timeouts must be positive") }
        guard initialReconnectDelay >= .zero, maximumReconnectDelay >= initialReconnectDelay else {
            throw fail("Redis reconnect delays must satisfy 0 <= initial <= maximum")
        }
    }
}
