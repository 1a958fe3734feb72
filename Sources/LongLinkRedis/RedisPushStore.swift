public import LongLinkServer
internal import LongLinkTransport

/// Reliable pushes kept in Redis, shared by every server of a fleet: the same operations and
/// bounds as the server's ``LongLinkServer/PushStore``, asynchronous because each is a round trip.
///
/// Per principal: a Redis Stream of the unacknowledged pushes, the seq as entry id (`<seq>-0`);
/// a meta hash with the last seq given, the **epoch** and the bytes stored; and a channel that hears
/// `<epoch>:<seq>` of every push produced. Producing is one Lua script (check the bound, take the
/// next seq, `XADD`, `PUBLISH`); acknowledging is `XDEL`; reading is `XRANGE` in pages. When the meta
/// hash is gone (Redis restarted without persistence, the keys were flushed or evicted) the next push
/// starts a new epoch, so that clients take its seqs as a new sequence instead of as ones they have
/// seen. Keys carry the hash tag `{p:<principal>}` after ``RedisConfiguration/keyPrefix``.
///
/// When Redis is unreachable or does not answer within ``RedisConfiguration/commandTimeout``, every
/// operation throws ``LongLinkError/Code-swift.struct/unavailable``: a push is either stored or
/// refused, never acknowledged to the producer unstored. A push whose reply was lost to a timeout
/// may still have been stored. The store reconnects by itself.
///
/// Not yet a ``LongLinkServer/PushStore``: the server calls its store synchronously on its event
/// loops, which a store behind a network round trip must not block.
public final class RedisPushStore: Sendable {
    /// The most unacknowledged pushes kept per principal.
    public let capacityPerPrincipal: Int
    /// The most bytes (topics and payloads) of unacknowledged pushes kept per principal.
    public let bytesPerPrincipal: Int
    /// The most pushes one `XRANGE` reads.
    static let pageSize = 256

    let client: RedisClient
    let keys: RedisKeys

    /// A store on the Redis of `configuration`, bounded per principal as ``InMemoryPushStore`` is.
    /// Connects on first use. Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for
    /// invalid settings.
    public init(
        configuration: RedisConfiguration, capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) {
        try configuration.validate()
        self.capacityPerPrincipal = max(1, capacityPerPrincipal)
        self.bytesPerPrincipal = max(1, bytesPerPrincipal)
        self.client = RedisClient(configuration: configuration)
        self.keys = RedisKeys(prefix: configuration.keyPrefix)
    }

    /// The channel that hears `<epoch>:<seq>` of each push stored for `principal`.
    public func channel(for principal: String) -> String { keys.channel(principal: principal) }

    /// Stores a push under the principal's next seq and publishes its seq.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the principal holds
    /// ``capacityPerPrincipal`` pushes or this one would take it past ``bytesPerPrincipal``, and
    /// ``LongLinkError/Code-swift.struct/unavailable`` when Redis does not answer.
    public func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush {
        let size = topic.utf8.count + payload.count
        let epoch = UInt64.random(in: 1...UInt64(UInt32.max))
        let reply = try await client.run(
            PushScripts.produce,
            keys: [Array(keys.meta(principal: principal).utf8), Array(keys.stream(principal: principal).utf8)],
            arguments: [
                Array(topic.utf8), payload, Array(String(size).utf8), Array(String(capacityPerPrincipal).utf8),
                Array(String(bytesPerPrincipal).utf8), Array(String(epoch).utf8),
                Array(keys.channel(principal: principal).utf8),
            ])
        guard let fields = reply.elements, fields.count == 3, let status = fields[0].int64, let first = fields[1].int64,
            let second = fields[2].int64
        else { throw .redisUnexpected("the produce script", reply) }
        guard status == 1, first > 0, second > 0 else {
            throw LongLinkError(
                code: .resourceExhausted,
                message:
                    "push store full for this principal (at most \(capacityPerPrincipal) unacknowledged pushes and \(bytesPerPrincipal) bytes)"
            )
        }
        return StoredPush(seq: UInt64(first), topic: topic, payload: payload, epoch: UInt64(second))
    }

    /// The unacknowledged pushes of `principal` with `seq > after`, in seq order, at most `limit`,
    /// read with `XRANGE` in pages of at most 256.
    public func unacknowledged(principal: String, after seq: UInt64, limit: Int) async throws(LongLinkError)
        -> [StoredPush]
    {
        let stream = keys.stream(principal: principal)
        var pushes: [StoredPush] = []
        var after = seq
        while pushes.count < limit, after < UInt64.max {
            let count = min(Self.pageSize, limit - pushes.count)
            let reply = try await client.run(
                RedisCommand("XRANGE", stream, "\(after + 1)-0", "+", "COUNT", String(count)))
            guard let entries = reply.elements else { throw .redisUnexpected("XRANGE", reply) }
            for entry in entries {
                guard let push = Self.push(from: entry) else { throw .redisUnexpected("XRANGE", entry) }
                pushes.append(push)
                after = push.seq
            }
            if entries.count < count { break }
        }
        return pushes
    }

    /// Forgets the given pushes of `principal` (`XDEL`); unknown seqs are ignored.
    public func acknowledge(principal: String, seqs: [UInt64]) async throws(LongLinkError) {
        guard !seqs.isEmpty else { return }
        _ = try await client.run(
            PushScripts.acknowledge,
            keys: [Array(keys.meta(principal: principal).utf8), Array(keys.stream(principal: principal).utf8)],
            arguments: seqs.map { Array(String($0).utf8) })
    }

    /// How many pushes of `principal` wait for an acknowledgement (`XLEN`).
    public func unacknowledgedCount(principal: String) async throws(LongLinkError) -> Int {
        let reply = try await client.run(RedisCommand("XLEN", keys.stream(principal: principal)))
        guard let count = reply.int64 else { throw .redisUnexpected("XLEN", reply) }
        return Int(count)
    }

    /// Closes the connection to Redis; later calls throw ``LongLinkError/Code-swift.struct/shutdown``.
    public func shutdown() async {
        await client.shutdown()
    }

    /// A stream entry `[id, [field, value, …]]` as a push.
    static func push(from entry: RESPValue) -> StoredPush? {
        guard let parts = entry.elements, parts.count == 2, let id = parts[0].string,
            let seq = id.split(separator: "-").first.flatMap({ UInt64($0) }), let fields = parts[1].elements
        else { return nil }
        var topic: String?
        var payload: [UInt8]?
        var epoch: UInt64 = 0
        var index = 0
        while index + 1 < fields.count {
            switch fields[index].string {
            case "t": topic = fields[index + 1].string
            case "d": payload = fields[index + 1].bytes
            case "e": epoch = fields[index + 1].string.flatMap { UInt64($0) } ?? 0
            default: break
            }
            index += 2
        }
        guard let topic, let payload else { return nil }
        return StoredPush(seq: seq, topic: topic, payload: payload, epoch: epoch)
    }
}
