internal import LongLinkWire

/// What the stores need of Redis, from one node (``RedisClient``) or a cluster
/// (``RedisClusterClient``): pipelined commands, and scripts run by their SHA-1.
///
/// Actor-constrained, so the shared methods below run isolated to the client like its own.
protocol RedisCommandRunner: Actor {
    /// Sends `commands` pipelined and returns their replies in order; error replies are returned,
    /// not thrown.
    func send(_ commands: [RedisCommand]) async throws(LongLinkError) -> [RESPValue]
    /// Closes the connections; later commands fail with `shutdown`.
    func shutdown() async
}

extension RedisCommandRunner {
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

    /// Runs each call's script pipelined, by its SHA-1, then by its source those Redis did not
    /// know; returns the replies in order, error replies returned, not thrown.
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
}
