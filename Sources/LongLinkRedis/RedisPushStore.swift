internal import LongLinkCore
public import LongLinkServer
internal import LongLinkTransport
internal import LongLinkWire

/// Reliable pushes kept in Redis, shared by every server of a fleet: a ``LongLinkServer/PushStore`` with
/// the bounds of ``LongLinkServer/InMemoryPushStore``, each operation a round trip.
///
/// Per principal: a Redis Stream of the unacknowledged pushes, the seq as entry id (`<seq>-0`);
/// a meta hash with the last seq given, the **epoch** and the bytes stored; and a channel that hears
/// `<epoch>:<seq>` of the last push of every produce call. Producing is one Lua script per batch of
/// concurrent appends for a principal (check the bounds, take the next seqs, an `XADD` each, one
/// `PUBLISH`; see ``append(_:)``); acknowledging is one script (`XTRIM MINID`
/// of the oldest, `XDEL` of others); reading is `XRANGE` in pages. When the meta hash is gone (Redis
/// restarted without persistence, the keys were flushed or evicted) the next push starts a new
/// epoch, so that clients take its seqs as a new sequence instead of as ones they have seen. Keys carry the hash tag `{p:<principal>}` after ``RedisConfiguration/keyPrefix``.
///
/// When Redis is unreachable or does not answer within ``RedisConfiguration/commandTimeout``, every
/// operation throws ``LongLinkError/Code-swift.struct/unavailable``: a push is either stored or
/// refused, never acknowledged to the producer unstored. A push whose reply was lost to a timeout
/// may still have been stored. The store reconnects by itself.
///
/// Cross-server delivery (``startObserving(_:)``): the store keeps a second connection for pub/sub,
/// subscribed to the channel of every principal the observer watches, and reports each message as
/// ``LongLinkServer/PushStoreObserver/pushStored``. After every (re)connection of that channel,
/// once every subscription is confirmed, it reports
/// ``LongLinkServer/PushStoreObserver/noticesLost``: pub/sub is at most once.
///
/// On a Redis Cluster (``init(cluster:capacityPerPrincipal:bytesPerPrincipal:)``) each principal's
/// keys live on the primary serving its slot, notices go by sharded pub/sub (a connection per
/// primary that holds watched channels), and a channel whose slot moves, or whose primary's
/// connection is lost, is subscribed again where the map says, which is reported as lost
/// notices. The produce script starts a new epoch for a principal whose log was last written
/// under another primary's replication id (a failover, a resharding); with
/// ``RedisConfiguration/durability`` `.replicated(n)` each produce call waits for `n` replicas.
public final class RedisPushStore: PushStore {
    /// The most unacknowledged pushes kept per principal.
    public let capacityPerPrincipal: Int
    /// The most bytes (topics and payloads) of unacknowledged pushes kept per principal.
    public let bytesPerPrincipal: Int
    /// The most pushes one `XRANGE` reads.
    static let pageSize = 256

    let backend: RedisBackend
    let keys: RedisKeys
    let produces: ProduceQueue
    private let observation = Locked(Observation())

    /// Who observes, and which channel is which principal's: names are escaped, so the map is
    /// kept rather than the names parsed back. Keyed by the channel's bytes: the channels of two
    /// spellings of one name in Unicode (two principals) are two entries.
    private struct Observation {
        var observer: PushStoreObserver?
        var subscriber: (any RedisNoticeSubscriber)?
        var principals: [PrincipalKey: String] = [:]
        var isShutDown = false
    }

    /// A store on the Redis of `configuration`, bounded per principal as ``InMemoryPushStore`` is.
    /// Connects on first use. Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for
    /// invalid settings.
    public convenience init(
        configuration: RedisConfiguration, capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) {
        try configuration.validate()
        self.init(
            backend: .single(configuration), keyPrefix: configuration.keyPrefix,
            capacityPerPrincipal: capacityPerPrincipal, bytesPerPrincipal: bytesPerPrincipal)
    }

    /// A store on the Redis Cluster reached through `seeds` (any of its nodes; each node is reached
    /// with the first seed's settings and its own address), bounded per principal as
    /// ``InMemoryPushStore`` is. Each principal's keys live on the primary serving its slot, and
    /// its notices go by sharded pub/sub (`SPUBLISH`). Connects on first use. Throws
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings or no seed.
    public convenience init(
        cluster seeds: [RedisConfiguration], capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20
    ) throws(LongLinkError) {
        try RedisConfiguration.validate(cluster: seeds)
        self.init(
            backend: .cluster(seeds), keyPrefix: seeds[0].keyPrefix, capacityPerPrincipal: capacityPerPrincipal,
            bytesPerPrincipal: bytesPerPrincipal)
    }

    init(backend: RedisBackend, keyPrefix: String, capacityPerPrincipal: Int, bytesPerPrincipal: Int) {
        self.capacityPerPrincipal = max(1, capacityPerPrincipal)
        self.bytesPerPrincipal = max(1, bytesPerPrincipal)
        self.backend = backend
        self.keys = RedisKeys(prefix: keyPrefix)
        let (keys, capacity, bytes) = (keys, self.capacityPerPrincipal, self.bytesPerPrincipal)
        self.produces = ProduceQueue { principal, batch in
            await Self.produce(
                batch, principal: principal, backend: backend, keys: keys, capacity: capacity, bytes: bytes)
        }
    }

    /// Where commands go.
    var client: any RedisCommandRunner { backend.runner }

    /// The channel that hears `<epoch>:<seq>` of each push stored for `principal`.
    public func channel(for principal: String) -> String { keys.channel(principal: principal) }

    /// Stores a push under the principal's next seq and publishes its seq.
    ///
    /// Group commit: appends for one principal that arrive while its previous produce call is in
    /// flight leave together in the next call (one script run, one notice), in call order; the
    /// first leaves at once. Each caller gets its own seq or error.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the principal holds
    /// ``capacityPerPrincipal`` pushes or this one would take it past ``bytesPerPrincipal``,
    /// ``LongLinkError/Code-swift.struct/unavailable`` when Redis does not answer (every push of
    /// that call fails alike), and ``LongLinkError/Code-swift.struct/cancelled`` when the caller is
    /// cancelled (its push, once queued, is still sent and may be stored).
    public func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush {
        try await produces.append(principal: push.principal, topic: push.topic, payload: push.payload)
    }

    /// Runs the produce script for `batch` and resumes each push with its seq or error.
    static func produce(
        _ batch: [ProducedPush], principal: String, backend: RedisBackend, keys: RedisKeys, capacity: Int,
        bytes: Int
    ) async {
        var arguments: [[UInt8]] = []
        arguments.reserveCapacity(batch.count * 3 + 6)
        for push in batch {
            arguments += [Array(push.topic.utf8), push.payload, Array(String(push.size).utf8)]
        }
        let epoch = UInt64.random(in: 1...UInt64(UInt32.max))
        arguments += [
            Array(String(capacity).utf8), Array(String(bytes).utf8), Array(String(epoch).utf8),
            Array(keys.channel(principal: principal).utf8), backend.publish, backend.checksLineage ? [49] : [48],
        ]
        let seqs: [Int64]
        do throws(LongLinkError) {
            let reply = try await backend.runner.run(
                PushScripts.produce,
                keys: [Array(keys.meta(principal: principal).utf8), Array(keys.stream(principal: principal).utf8)],
                arguments: arguments, replicas: backend.replicas)
            guard let fields = producedSeqs(reply, count: batch.count) else {
                throw .redisUnexpected("the produce script", reply)
            }
            seqs = fields
        } catch {
            for push in batch { push.outcome.resume(.failure(error)) }
            return
        }
        let full = LongLinkError(
            code: .resourceExhausted,
            message: "push store full for this principal (at most \(capacity) unacknowledged pushes and \(bytes) bytes)"
        )
        for (index, push) in batch.enumerated() {
            let seq = seqs[index + 1]
            push.outcome.resume(
                seq > 0
                    ? .success(
                        StoredPush(seq: UInt64(seq), topic: push.topic, payload: push.payload, epoch: UInt64(seqs[0])))
                    : .failure(full))
        }
    }

    /// The unacknowledged pushes of the read's principal with `seq > after`, in seq order, at most
    /// `limit`, read with `XRANGE` in pages of at most 256.
    public func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
        let stream = keys.stream(principal: read.principal)
        let limit = read.limit
        var pushes: [StoredPush] = []
        var after = read.after
        while pushes.count < limit, after < UInt64.max {
            let count = min(Self.pageSize, limit - pushes.count)
            let reply = try await client.run(
                RedisCommand("XRANGE", stream, "\(after + 1)-0", "+", "COUNT", String(count)).keyed(1..<2))
            guard let page = Self.pushes(fromPage: reply) else { throw .redisUnexpected("XRANGE", reply) }
            pushes += page
            if let last = page.last { after = last.seq }
            if page.count < count { break }
        }
        return pushes
    }

    /// Forgets the given pushes and gives their bytes back to the bound, only if their principal's
    /// pushes are still numbered in their epoch (0: whatever the epoch): acks of an epoch that ended
    /// (Redis lost the principal and numbers anew) delete nothing. Unknown seqs are ignored. One
    /// script call: the acknowledged pushes that are the principal's oldest go with one
    /// `XTRIM MINID`, any others one `XDEL` each.
    public func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
        guard !acks.seqs.isEmpty else { return }
        let principal = acks.principal
        _ = try await client.run(
            PushScripts.acknowledge,
            keys: [Array(keys.meta(principal: principal).utf8), Array(keys.stream(principal: principal).utf8)],
            arguments: [Array(String(acks.epoch).utf8)] + acks.seqs.map { Array(String($0).utf8) })
    }

    /// How many pushes of `principal` wait for an acknowledgement (`XLEN`).
    public func unacknowledgedCount(principal: String) async throws(LongLinkError) -> Int {
        let reply = try await client.run(RedisCommand("XLEN", keys.stream(principal: principal)).keyed(1..<2))
        guard let count = reply.int64 else { throw .redisUnexpected("XLEN", reply) }
        return Int(count)
    }

    /// Starts reporting pushes stored for the principals `observer` watches, on a pub/sub
    /// connection of the store's own that reconnects with backoff. Only the first call counts.
    public func startObserving(_ observer: PushStoreObserver) async {
        let subscriber = observation.withLock { state -> (any RedisNoticeSubscriber)? in
            guard !state.isShutDown, state.subscriber == nil else { return nil }
            state.observer = observer
            let subscriber = backend.subscriber { [weak self] event in self?.observed(event) }
            state.subscriber = subscriber
            return subscriber
        }
        await subscriber?.start()
    }

    /// Subscribes to the channel of `principal` when the observer watches it and unsubscribes
    /// otherwise, reading ``LongLinkServer/PushStoreObserver/isWatching`` when the subscriber acts
    /// (calls are serialized there). Returns once Redis has confirmed the change, or at once while
    /// the pub/sub connection is down (its reconnection subscribes and reports lost notices).
    /// Does nothing before ``startObserving(_:)``.
    public func refreshObservation(of principal: String) async {
        let current = observation.withLock { state -> (any RedisNoticeSubscriber, PushStoreObserver)? in
            guard !state.isShutDown, let subscriber = state.subscriber, let observer = state.observer else {
                return nil
            }
            return (subscriber, observer)
        }
        guard let current else { return }
        let (subscriber, observer) = current
        let channel = keys.channel(principal: principal)
        await subscriber.update(channel) { [observation] in
            let watching = observer.isWatching(principal)
            observation.withLock { $0.principals[PrincipalKey(channel)] = watching ? principal : nil }
            return watching
        }
    }

    /// On the subscriber's loop: a notice for a watched principal, or the (re)connection.
    private func observed(_ event: RedisSubscriber.Event) {
        let (observer, principal) = observation.withLock { state -> (PushStoreObserver?, String?) in
            guard !state.isShutDown else { return (nil, nil) }
            if case .message(let channel, _) = event {
                return (state.observer, state.principals[PrincipalKey(channel)])
            }
            return (state.observer, nil)
        }
        guard let observer else { return }
        switch event {
        case .subscribed: observer.noticesLost()
        case .disconnected, .unsubscribed: break
        case .message(_, let payload):
            guard let principal else { return }
            // Push notices are `<epoch>:<seq>`; an exclusive login is `s:<client_id>`.
            if payload.starts(with: Self.sessionNotice) {
                observer.sessionStarted(principal, String(decoding: payload.dropFirst(2), as: UTF8.self))
            } else {
                observer.pushStored(principal)
            }
        }
    }

    /// The prefix of a session notice on a principal's channel.
    static let sessionNotice = Array("s:".utf8)

    /// How long an exclusive login's session record lasts: servers that missed its notice end the
    /// older sessions at their next check (every second) or when their notice channel is back.
    static let sessionRecordLifetime = Duration.seconds(60)

    /// Records the announced client as its principal's exclusive client (key `{p:<principal>}:x`,
    /// for 60 seconds, with Redis's time of the login) and publishes `s:<clientID>` on the
    /// principal's channel, in one script call: every server observing the principal ends its
    /// sessions of other clients, and a server that misses the notice finds the record
    /// (``sessionRecords(of:)``).
    public func announceSession(_ session: SessionAnnouncement) async throws(LongLinkError) {
        let (principal, clientID) = (session.principal, session.clientID)
        let lifetime = Self.sessionRecordLifetime.components.seconds * 1000
        _ = try await client.run(
            PushScripts.announceSession, keys: [Array(keys.session(principal: principal).utf8)],
            arguments: [
                Array(clientID.utf8), Array(String(lifetime).utf8), Array(channel(for: principal).utf8),
                backend.publish,
            ])
    }

    /// The exclusive login recorded for each of `principals` that has a live record, its age by
    /// Redis's clock: a `TIME` and one `GET` each, pipelined in groups of 256 (each key in its
    /// principal's slot). A record that does not read as one is skipped.
    public func sessionRecords(of principals: [String]) async throws(LongLinkError) -> [SessionRecord] {
        var records: [SessionRecord] = []
        var start = 0
        while start < principals.count {
            let group = principals[start..<min(start + 256, principals.count)]
            let replies = try await client.send(
                [RedisCommand("TIME")] + group.map { RedisCommand("GET", keys.session(principal: $0)).keyed(1..<2) })
            guard replies.count == group.count + 1, let now = Self.microseconds(fromTime: replies[0]) else {
                throw .redisUnexpected("TIME", replies.first ?? .null)
            }
            for (principal, reply) in zip(group, replies.dropFirst()) {
                if let record = Self.sessionRecord(of: principal, try reply.checked("GET"), now: now) {
                    records.append(record)
                }
            }
            start += group.count
        }
        return records
    }

    /// A `TIME` reply `[seconds, microseconds]` in microseconds.
    static func microseconds(fromTime reply: RESPValue) -> Int64? {
        guard let parts = reply.elements, parts.count == 2, let seconds = parts[0].int64,
            let micros = parts[1].int64, (0..<Int64(1) << 40).contains(seconds), (0..<1_000_000).contains(micros)
        else { return nil }
        return seconds * 1_000_000 + micros
    }

    /// `principal`'s session record `<µs>:<client id>` read at `now` (µs), or nil when it is not one.
    static func sessionRecord(of principal: String, _ reply: RESPValue, now: Int64) -> SessionRecord? {
        guard let bytes = reply.bytes, let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
            let at = Int64(String(decoding: bytes[..<colon], as: UTF8.self)), at >= 0
        else { return nil }
        let clientID = String(decoding: bytes[(colon + 1)...], as: UTF8.self)
        return SessionRecord(principal: principal, clientID: clientID, age: .microseconds(max(0, now - min(at, now))))
    }

    /// Stops reporting and closes both connections to Redis; later calls throw
    /// ``LongLinkError/Code-swift.struct/shutdown``.
    public func shutdown() async {
        let subscriber = observation.withLock { state in
            state.isShutDown = true
            state.principals = [:]
            return state.subscriber
        }
        await produces.shutdown()
        await subscriber?.shutdown()
        await client.shutdown()
    }

    /// The produce script's reply for `count` pushes, `{epoch, seq₁, …, seqₙ}`, or nil when it is
    /// not that (every element an integer, an epoch above 0).
    static func producedSeqs(_ reply: RESPValue, count: Int) -> [Int64]? {
        guard let fields = reply.elements?.compactMap(\.int64), fields.count == count + 1, fields[0] > 0 else {
            return nil
        }
        return fields
    }

    /// An `XRANGE` reply as pushes, or nil when any entry is not one.
    static func pushes(fromPage reply: RESPValue) -> [StoredPush]? {
        guard let entries = reply.elements else { return nil }
        var pushes: [StoredPush] = []
        pushes.reserveCapacity(entries.count)
        for entry in entries {
            guard let push = push(from: entry) else { return nil }
            pushes.append(push)
        }
        return pushes
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
