internal import LongLinkWire

/// The errors of the Redis client, all ``LongLinkError``s.
extension LongLinkError {
    /// Redis could not be reached or did not answer: the operation failed closed, retrying later may work.
    static func redisUnavailable(_ message: String, cause: (any Error & Sendable)? = nil) -> LongLinkError {
        LongLinkError(code: .unavailable, message: message, underlying: cause)
    }

    /// Redis answered `command` with an error. Kinds that pass are `unavailable`, which the server
    /// retries within a request's deadline (see `StoreRetry`): `LOADING` (a restarted node reading
    /// its data), `BUSY` (a script running long), `MASTERDOWN` and `READONLY` (a replica, or a
    /// primary demoted in a failover), `TRYAGAIN` and `CLUSTERDOWN` (a slot moving, a cluster
    /// electing), `NOREPLICAS` (too few replicas in reach for `min-replicas-to-write`) and `OOM`
    /// (memory full until keys expire). A refused login is `unauthenticated`; the rest (`ERR`,
    /// `WRONGTYPE`, `NOSCRIPT` after its retry, a `MOVED` a single node should never send, ...) is
    /// `internalError`, final. Connection trouble (refused, reset, closed, no answer within the
    /// command timeout, a reconnection's backoff) is `unavailable` too (``redisUnavailable(_:cause:)``).
    static func redisReply(_ text: [UInt8], command: String) -> LongLinkError {
        let error = RedisServerError(reply: String(decoding: text, as: UTF8.self))
        let code: LongLinkError.Code =
            switch error.prefix {
            case "LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN", "NOREPLICAS", "OOM":
                .unavailable
            case "NOAUTH", "WRONGPASS", "NOPERM": .unauthenticated
            default: .internalError
            }
        return LongLinkError(code: code, message: "Redis refused \(command): \(error)", underlying: error)
    }

    /// Redis answered the connection's `HELLO` with an error: a wrong password, an unknown user,
    /// or a Redis without `HELLO`. The message names Redis and the user; the password is replaced
    /// by `***` wherever the reply repeats it (a Redis that does not know `HELLO` echoes its arguments).
    static func redisLoginRefused(_ text: [UInt8], configuration: RedisConfiguration) -> LongLinkError {
        var reply = String(decoding: text, as: UTF8.self)
        if let password = configuration.password, !password.isEmpty {
            reply = reply.replacing(password, with: "***")
        }
        let refused = redisReply(Array(reply.utf8), command: "HELLO")
        let who =
            configuration.password == nil
            ? "a connection without credentials" : "the login of user '\(configuration.username ?? "default")'"
        return LongLinkError(
            code: refused.code,
            message: "Redis at \(configuration.host):\(configuration.port) refused \(who): \(reply)",
            underlying: refused.underlying)
    }

    /// The bytes from Redis are not RESP3 or exceed the parser's bounds.
    static func redisProtocol(_ error: RESPParseError) -> LongLinkError {
        LongLinkError(code: .protocolViolation, message: "bad reply from Redis: \(error)", underlying: error)
    }

    /// Redis answered with a reply of a shape the caller does not expect.
    static func redisUnexpected(_ command: String, _ reply: RESPValue) -> LongLinkError {
        LongLinkError(code: .internalError, message: "unexpected reply to \(command) from Redis: \(reply)")
    }
}

extension RESPValue {
    /// The value, or the typed error when it is an error reply to `command`.
    func checked(_ command: String) throws(LongLinkError) -> RESPValue {
        if let text = errorText { throw LongLinkError.redisReply(text, command: command) }
        return self
    }
}
