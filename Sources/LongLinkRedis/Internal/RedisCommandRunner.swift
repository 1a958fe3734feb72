internal import LongLinkWire

/// What the stores need of Redis, from one node (``RedisClient``) or a cluster
/// (``RedisClusterClient``): pipelined commands, and scripts run by their SHA-1.
///
/// Actor-constrained, so the shared methods below run isolated to the client like its own.
protocol RedisCommandRunner: Actor {
    /// Sends `commands` pipelined and returns their replies in order; error replies are returned,
    /// not thrown. With `replicas` above 0 the commands are followed by `WAIT` on each connection
    /// they went to, and the call throws `unavailable` when fewer replicas confirm them in time
    /// (see ``RedisDurability``).
    func send(_ commands: [RedisCommand], replicas: Int) async throws(LongLinkError) -> [RESPValue]
    /// Closes the connections; later commands fail with `shutdown`.
    func shutdown() async
}

extension RedisCommandRunner {
    /// Sends `commands` pipelined, without waiting for replicas.
    func send(_ commands: [RedisCommand]) async throws(LongLinkError) -> [RESPValue] {
        try await send(commands, replicas: 0)
    }

    /// Sends one command and returns its reply, throwing an error reply as a typed error.
    func run(_ command: RedisCommand) async throws(LongLinkError) -> RESPValue {
        let replies = try await send([command])
        guard let reply = replies.first else { throw .redisUnexpected(command.name, .null) }
        return try reply.checked(command.name)
    }

    /// Runs `script` by its SHA-1, and by its source when Redis does not know it; with `replicas`,
    /// its writes confirmed by that many replicas (see ``send(_:replicas:)``).
    func run(
        _ script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]], replicas: Int = 0
    ) async throws(LongLinkError) -> RESPValue {
        let replies = try await send([script.evalSHA(keys: keys, arguments: arguments)], replicas: replicas)
        if let text = replies.first?.errorText, text.starts(with: Array("NOSCRIPT".utf8)) {
            let retried = try await send([script.eval(keys: keys, arguments: arguments)], replicas: replicas)
            guard let reply = retried.first else { throw .redisUnexpected("EVAL", .null) }
            return try reply.checked("EVAL")
        }
        guard let reply = replies.first else { throw .redisUnexpected("EVALSHA", .null) }
        return try reply.checked("EVALSHA")
    }

    /// Runs each call's script pipelined, by its SHA-1, then by its source those Redis did not
    /// know; returns the replies in order, error replies returned, not thrown.
    func send(
        scripts calls: [(script: RedisScript, keys: [[UInt8]], arguments: [[UInt8]])], replicas: Int = 0
    ) async throws(LongLinkError) -> [RESPValue] {
        var replies = try await send(
            calls.map { $0.script.evalSHA(keys: $0.keys, arguments: $0.arguments) }, replicas: replicas)
        let unknown = replies.indices.filter { replies[$0].errorText?.starts(with: Array("NOSCRIPT".utf8)) == true }
        guard !unknown.isEmpty else { return replies }
        let retried = try await send(
            unknown.map { calls[$0].script.eval(keys: calls[$0].keys, arguments: calls[$0].arguments) },
            replicas: replicas)
        for (index, reply) in zip(unknown, retried) { replies[index] = reply }
        return replies
    }
}
