public import LongLinkServer
internal import LongLinkTransport

/// The de-dup window in Redis, shared by every server of a fleet: a request identified by
/// (principal, client_id, request_id) runs once, on whichever server it reaches first, while the
/// window lasts.
///
/// A server that receives a request calls ``begin(principal:clientID:requestID:runningFor:)``,
/// which is one `SET key value NX PX ms GET`: the first caller gets
/// ``LongLinkServer/SharedDedupeClaim/run`` and runs the request; later callers learn that it is
/// ``LongLinkServer/SharedDedupeClaim/running`` on some server, or get its stored reply
/// (``LongLinkServer/SharedDedupeClaim/finished(_:)``). The runner then stores the reply with
/// ``finish(principal:clientID:requestID:reply:window:)`` for the window, or gives the request up
/// with ``abandon(principal:clientID:requestID:)`` so that a resend may run it again. Both act only on
/// an entry this store's instance claimed (each instance has an owner token of its own), so that a
/// server whose claim expired cannot overwrite another's. Both also publish a notice on the entry's
/// channel, which wakes the callers of
/// ``awaitOutcome(principal:clientID:requestID:runningFor:until:)`` on every server.
///
/// The reply is opaque bytes: the server decides what it stores (status and payload). When Redis
/// does not answer, every call throws ``LongLinkError/Code-swift.struct/unavailable``: the caller
/// fails the request closed rather than run it without the window.
public final class RedisDedupeStore: SharedDedupeStore {
    let client: RedisClient
    let keys: RedisKeys
    /// Marks this instance's claims.
    let owner: String
    /// The pub/sub side of ``awaitOutcome(principal:clientID:requestID:runningFor:until:)``.
    let notices: DedupeNotices
    /// The first wait between two checks of an awaited entry, doubled up to the second. Pub/sub is
    /// at most once, so a lost notice costs at most one such wait. Tests lengthen them to show
    /// that the notices alone wake waiters.
    let pollIntervals: (first: Duration, last: Duration)

    /// A window on the Redis of `configuration`. Connects on first use. Throws
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings.
    public convenience init(configuration: RedisConfiguration) throws(LongLinkError) {
        try self.init(configuration: configuration, pollIntervals: (.milliseconds(50), .milliseconds(500)))
    }

    init(configuration: RedisConfiguration, pollIntervals: (first: Duration, last: Duration)) throws(LongLinkError) {
        try configuration.validate()
        self.pollIntervals = pollIntervals
        self.client = RedisClient(configuration: configuration)
        self.keys = RedisKeys(prefix: configuration.keyPrefix)
        self.owner = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        self.notices = DedupeNotices(configuration: configuration, loop: client.loop)
    }

    /// Claims the request, or reports who has it. `runningFor` bounds the claim: a server that dies
    /// while running leaves it until then, after which a resend runs the request again (pass the
    /// request's timeout and a margin).
    public func begin(
        principal: String?, clientID: String, requestID: String, runningFor: Duration
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        let key = keys.dedupe(principal: principal, clientID: clientID, requestID: requestID)
        let reply = try await client.run(
            RedisCommand(
                "SET", key, "R" + owner, "NX", "PX", String(Self.milliseconds(runningFor)), "GET"))
        if case .null = reply.unattributed { return .run }
        guard let value = reply.bytes, let kind = value.first else { throw .redisUnexpected("SET NX GET", reply) }
        return kind == UInt8(ascii: "D") ? .finished(Array(value.dropFirst())) : .running
    }

    /// Stores the reply of a request this instance claimed, kept for `window`. Returns false when
    /// the claim is no longer this instance's (it expired; another server may have run the request).
    @discardableResult
    public func finish(
        principal: String?, clientID: String, requestID: String, reply: [UInt8], window: Duration
    ) async throws(LongLinkError) -> Bool {
        let key = keys.dedupe(principal: principal, clientID: clientID, requestID: requestID)
        let result = try await client.run(
            DedupeScripts.finish, keys: [Array(key.utf8)],
            arguments: [
                Array(("R" + owner).utf8), [UInt8(ascii: "D")] + reply, Array(String(Self.milliseconds(window)).utf8),
                Array(keys.dedupeNotice(entry: key).utf8),
            ])
        return result.int64 == 1
    }

    /// Forgets a request this instance claimed and did not finish (its handler failed to start, it
    /// was cancelled), so that a resend runs it. Returns false when the claim was not this instance's.
    @discardableResult
    public func abandon(principal: String?, clientID: String, requestID: String) async throws(LongLinkError) -> Bool {
        let key = keys.dedupe(principal: principal, clientID: clientID, requestID: requestID)
        let result = try await client.run(
            DedupeScripts.abandon, keys: [Array(key.utf8)],
            arguments: [Array(("R" + owner).utf8), Array(keys.dedupeNotice(entry: key).utf8)])
        return result.int64 == 1
    }

    /// Waits while the request runs elsewhere: returns
    /// ``LongLinkServer/SharedDedupeClaim/finished(_:)`` once its reply is stored,
    /// ``LongLinkServer/SharedDedupeClaim/run`` when it was given up (or its claim expired) and this
    /// caller claimed it for `runningFor`, or ``LongLinkServer/SharedDedupeClaim/running`` at
    /// `deadline` or as soon as the calling task is cancelled.
    ///
    /// Subscribes to the entry's notice channel first and checks it with
    /// ``begin(principal:clientID:requestID:runningFor:)`` after, so that an outcome stored in between
    /// is not missed; then checks again on each notice, and every 50 ms doubling to 500 ms since a
    /// notice may be lost. A cancellation that arrives while a check is on the wire returns
    /// `running`, even if that check claimed the entry: such a claim lasts `runningFor`.
    public func awaitOutcome(
        principal: String?, clientID: String, requestID: String, runningFor: Duration,
        until deadline: ContinuousClock.Instant
    ) async throws(LongLinkError) -> SharedDedupeClaim {
        if Task.isCancelled { return .running }
        let key = keys.dedupe(principal: principal, clientID: clientID, requestID: requestID)
        let channel = keys.dedupeNotice(entry: key)
        let waiter = NoticeWaiter()
        let subscriber = try await notices.join(channel, waiter)
        var interval = pollIntervals.first
        var outcome: Result<SharedDedupeClaim, LongLinkError> = .success(.running)
        while !Task.isCancelled {
            do throws(LongLinkError) {
                let claim = try await begin(
                    principal: principal, clientID: clientID, requestID: requestID, runningFor: runningFor)
                if claim != .running {
                    outcome = .success(claim)
                    break
                }
            } catch {
                if !Task.isCancelled { outcome = .failure(error) }
                break
            }
            let now = ContinuousClock.now
            guard now < deadline else { break }
            await waiter.next(until: min(deadline, now.advanced(by: interval)))
            interval = min(interval * 2, pollIntervals.last)
        }
        await notices.leave(channel, waiter, from: subscriber)
        return try outcome.get()
    }

    /// Closes both connections to Redis and wakes every waiter; later calls throw
    /// ``LongLinkError/Code-swift.struct/shutdown``.
    public func shutdown() async {
        await client.shutdown()
        await notices.shutdown()
    }

    /// At least 1 ms: `PX 0` is an error in Redis.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

/// The compare-and-set scripts of ``RedisDedupeStore``.
enum DedupeScripts {
    /// KEYS: entry. ARGV: the owner's running value, the reply value, the window in ms, the
    /// notice channel.
    static let finish = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
          redis.call('PUBLISH', ARGV[4], 'finished')
          return 1
        end
        return 0
        """)

    /// KEYS: entry. ARGV: the owner's running value, the notice channel.
    static let abandon = RedisScript(
        """
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('DEL', KEYS[1])
          redis.call('PUBLISH', ARGV[2], 'abandoned')
          return 1
        end
        return 0
        """)
}
