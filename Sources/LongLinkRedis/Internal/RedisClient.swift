internal import LongLinkTransport
internal import LongLinkWire

/// Commands to one Redis, on one connection opened when first needed and again after it closed
/// (``RedisCommandRunner`` adds `run` and the script calls).
///
/// An actor: it owns the connection and the reconnection backoff. Commands do not queue while
/// Redis is away: a command that finds no connection tries to open one (sharing an attempt already
/// under way), and while the backoff after a failed attempt runs it fails at once with
/// `unavailable`, so that callers fail closed within their deadlines.
actor RedisClient: RedisCommandRunner {
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
    func send(_ commands: [RedisCommand], replicas: Int) async throws(LongLinkError) -> [RESPValue] {
        let connection = try await currentConnection()
        guard replicas > 0 else { return try await connection.send(commands, timeout: configuration.commandTimeout) }
        var replies = try await connection.send(
            commands + [RedisDurability.wait(replicas, within: configuration.commandTimeout)],
            timeout: configuration.commandTimeout)
        try RedisDurability.check(replies.removeLast(), replicas: replicas)
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
