internal import LongLinkTransport
internal import LongLinkWire

/// Commands to one Redis, on one connection opened when first needed and again after it closed.
///
/// An actor: it owns the connection and the reconnection backoff. Commands do not queue while
/// Redis is away: a command that finds no connection tries to open one (sharing an attempt already
/// under way), and while the backoff after a failed attempt runs it fails at once with
/// `unavailable`, so that callers fail closed within their deadlines.
actor RedisClient {
    let configuration: RedisConfiguration
    let loop: EventLoop
    private var connection: RedisConnection?
    private var attempt: Task<Result<RedisConnection, LongLinkError>, Never>?
    private var backoff: ReconnectBackoff
    private var lastFailure: LongLinkError?
    private var isShutDown = false

    init(configuration: RedisConfiguration, loop: EventLoop = EventLoopGroup.shared.next()) {
        self.configuration = configuration
        self.loop = loop
        self.backoff = ReconnectBackoff(
            initial: configuration.initialReconnectDelay, maximum: configuration.maximumReconnectDelay)
    }

    /// Sends `commands` pipelined and returns their replies in order; error replies are returned,
    /// not thrown (see ``RESPValue/checked(_:)``). Throws `unavailable` when Redis cannot be reached
    /// or does not answer within ``RedisConfiguration/commandTimeout``.
    func send(_ commands: [RedisCommand]) async throws(LongLinkError) -> [RESPValue] {
        let connection = try await currentConnection()
        return try await connection.send(commands, timeout: configuration.commandTimeout)
    }

    /// Sends one command and returns its reply, throwing an error reply as a typed error.
    func run(_ command: RedisCommand) async throws(LongLinkError) -> RESPValue {
        let replies = try await send([command])
        guard let reply = replies.first else { throw .redisUnexpected(command.name, .null) }
        return try reply.checked(command.name)
    }

    /// Runs `script` by its SHA-1, and by its source when Redis does not know it.
    func run(_ script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]]) async throws(LongLinkError) -> RESPValue {
        let replies = try await send([script.evalSHA(keys: keys, arguments: arguments)])
        if let text = replies.first?.errorText, text.starts(with: Array("NOSCRIPT".utf8)) {
            return try await run(script.eval(keys: keys, arguments: arguments))
        }
        guard let reply = replies.first else { throw .redisUnexpected("EVALSHA", .null) }
        return try reply.checked("EVALSHA")
    }

    /// Runs each call's script pipelined in one write, by its SHA-1, then by its source those Redis
    /// did not know; returns the replies in order, error replies returned, not thrown.
    func send(
        scripts calls: [(script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]])]
    ) async throws(LongLinkError) -> [RESPValue] {
        var replies = try await send(calls.map { $0.script.evalSHA(keys: $0.keys, arguments: $0.arguments) })
        let unknown = replies.indices.filter { replies[$0].errorText?.starts(with: Array("NOSCRIPT".utf8)) == true }
        guard !unknown.isEmpty else { return replies }
        let retried = try await send(
            unknown.map { calls[$0].script.eval(keys: calls[$0].keys, arguments: calls[$0].arguments) })
        for (index, reply) in zip(unknown, retried) { replies[index] = reply }
        return replies
    }

    /// Closes the connection; later commands fail with `shutdown`.
    func shutdown() {
        isShutDown = true
        attempt?.cancel()
        connection?.close()
        connection = nil
    }

    private func currentConnection() async throws(LongLinkError) -> RedisConnection {
        if isShutDown { throw LongLinkError(code: .shutdown, message: "the Redis client was shut down") }
        if let connection, !connection.isClosed { return connection }
        connection = nil
        if let attempt { return try await attempt.value.get() }
        let now = ContinuousClock.now
        guard backoff.permitsAttempt(at: now) else {
            throw .redisUnavailable(
                "Redis at \(configuration.host):\(configuration.port) is unreachable; the next attempt waits its backoff",
                cause: lastFailure)
        }
        let configuration = configuration
        let loop = loop
        let task = Task { () -> Result<RedisConnection, LongLinkError> in
            do throws(LongLinkError) {
                return .success(try await RedisConnection.open(configuration, on: loop))
            } catch {
                return .failure(error)
            }
        }
        attempt = task
        let result = await task.value
        attempt = nil
        switch result {
        case .success(let opened):
            if isShutDown {
                opened.close()
                throw LongLinkError(code: .shutdown, message: "the Redis client was shut down")
            }
            backoff.succeeded()
            lastFailure = nil
            connection = opened
            return opened
        case .failure(let error):
            backoff.failed(at: .now, jitter: Double.random(in: 0.5...1))
            lastFailure = error
            // Connection trouble is already `unavailable`; a refused login keeps its own code.
            throw error
        }
    }
}
