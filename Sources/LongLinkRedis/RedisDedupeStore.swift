internal import LongLinkCore
public import LongLinkServer
internal import LongLinkTransport

/// The de-dup window in Redis, shared by every server of a fleet: a request identified by
/// (principal, client_id, request_id) runs once, on whichever server it reaches first, while the
/// window lasts.
///
/// A server that receives a request calls ``begin(_:)``,
/// which is one `SET key value NX PX ms GET`: the first caller gets
/// ``LongLinkServer/DedupeClaim/run`` and runs the request; later callers learn that it is
/// ``LongLinkServer/DedupeClaim/running`` on some server, or get its stored reply
/// (``LongLinkServer/DedupeClaim/finished(_:)``). The runner then stores the reply with
/// ``finish(_:)`` for the window, or gives the request up
/// with ``abandon(_:)`` so that a resend may run it again. Both act only on
/// an entry this store's instance claimed (each instance has an owner token of its own), so that a
/// server whose claim expired cannot overwrite another's. Both also publish a notice on the entry's
/// channel, which wakes the callers of
/// ``awaitOutcome(_:)`` on every server.
///
/// A claim follows its owner: the instance holds a liveness lease (see ``ClaimLease``) and renews
/// it and the claims of its running requests, so that a claim does not expire while its owner
/// lives, however long the request runs. A waiter that finds the owner's lease gone marks the
/// entry `UNKNOWN` (it keeps the claim's time to live) and throws
/// ``LongLinkError/Code-swift.struct/outcomeUnknown``; so does every later
/// ``begin(_:)`` for it: the request is never run a second time.
///
/// The reply is opaque bytes: the server decides what it stores (status and payload). When Redis
/// does not answer, or answers with an error that passes (`READONLY`, `CLUSTERDOWN`, `LOADING`,
/// ...), every call throws ``LongLinkError/Code-swift.struct/unavailable``: the server makes it
/// again within the request's deadline, and fails the request closed rather than run it without
/// the window when the deadline comes first.
///
/// A claim whose reply was lost (the connection closed, Redis paused past the command timeout) may
/// have been made. The instance keeps such claims *in doubt* for their term: the next claim of the
/// entry that finds the instance's own value returns ``LongLinkServer/DedupeClaim/run``, once, for
/// no handler ran for it. A value left by a claim that ran here (its reply could not be stored) is
/// never taken for one; see `ClaimsInDoubt` for the bound on what is kept.
public final class RedisDedupeStore: DedupeStore {
    let backend: RedisBackend
    let keys: RedisKeys
    /// Marks this instance's claims.
    let owner: String
    /// The pub/sub side of ``awaitOutcome(_:)``.
    let notices: DedupeNotices
    /// The first wait between two checks of an awaited entry, doubled up to the second. Pub/sub is
    /// at most once, so a lost notice costs at most one such wait. Tests lengthen them to show
    /// that the notices alone wake waiters.
    let pollIntervals: (first: Duration, last: Duration)
    /// The lease and the claims it renews.
    let keeper: ClaimKeeper
    /// Shortens the first term of every claim (tests: a request that outlives its claim's term).
    let termLimit: Duration?
    /// Claims, sent a batch per round trip.
    let claims: DedupeQueue
    /// Stored replies, sent a batch per round trip: a queue of their own, so that a claim never
    /// waits behind a reply's round trip (the two pipeline on the connection).
    let replies: DedupeQueue
    /// What one tenant may hold (``RedisConfiguration/dedupeBudgets``).
    let budgets: RedisDedupeBudgets
    /// The claims this instance may have made without hearing back (see ``ClaimsInDoubt``).
    let doubts = Locked(ClaimsInDoubt())
    /// The de-dup window the server last gave ``begin(_:)``
    /// (ms): a waiter's claim is checked by it too (see ``awaitOutcome(_:)``).
    private let lastWindow = Locked<Int64?>(nil)

    /// A window on the Redis of `configuration`. Connects on first use. Throws
    /// ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings.
    public convenience init(configuration: RedisConfiguration) throws(LongLinkError) {
        try self.init(configuration: configuration, lease: ClaimLease())
    }

    /// A window on the Redis of `configuration` whose claims follow the owner's `lease`. Connects on
    /// first use. Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings.
    public convenience init(configuration: RedisConfiguration, lease: ClaimLease) throws(LongLinkError) {
        try self.init(
            configuration: configuration, lease: lease, pollIntervals: (.milliseconds(50), .milliseconds(500)))
    }

    /// A window on the Redis Cluster reached through `seeds` (see
    /// ``RedisPushStore/init(cluster:capacityPerPrincipal:bytesPerPrincipal:)``), whose claims
    /// follow the owner's `lease`. Each entry lives on the primary serving its principal's slot
    /// (a connection without a login: its client's), and its notices go by sharded pub/sub.
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid settings or no seed.
    public convenience init(cluster seeds: [RedisConfiguration], lease: ClaimLease = ClaimLease()) throws(LongLinkError)
    {
        try RedisConfiguration.validate(cluster: seeds)
        try self.init(
            backend: .cluster(seeds), keyPrefix: seeds[0].keyPrefix, budgets: seeds[0].dedupeBudgets, lease: lease,
            pollIntervals: (.milliseconds(50), .milliseconds(500)))
    }

    convenience init(
        configuration: RedisConfiguration, lease: ClaimLease = ClaimLease(),
        pollIntervals: (first: Duration, last: Duration), termLimit: Duration? = nil
    ) throws(LongLinkError) {
        try configuration.validate()
        try self.init(
            backend: .single(configuration), keyPrefix: configuration.keyPrefix, budgets: configuration.dedupeBudgets,
            lease: lease, pollIntervals: pollIntervals, termLimit: termLimit)
    }

    init(
        backend: RedisBackend, keyPrefix: String, budgets: RedisDedupeBudgets = RedisDedupeBudgets(), lease: ClaimLease,
        pollIntervals: (first: Duration, last: Duration), termLimit: Duration? = nil
    ) throws(LongLinkError) {
        try lease.validate()
        try budgets.validate()
        self.budgets = budgets
        self.pollIntervals = pollIntervals
        self.termLimit = termLimit
        self.backend = backend
        self.keys = RedisKeys(prefix: keyPrefix)
        self.owner = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        self.notices = DedupeNotices(backend: backend)
        let keeper = ClaimKeeper(client: backend.runner, lease: lease, leaseKey: keys.lease(owner: owner), owner: owner)
        self.keeper = keeper
        let send = { @Sendable (batch: [DedupeOperation], sending: @escaping @Sendable (Int) -> Void) async in
            _ = await Self.sendBatch(
                batch, backend: backend, running: keeper.running, budgets: budgets, sending: sending)
        }
        self.claims = DedupeQueue(send: send)
        self.replies = DedupeQueue(send: send)
    }

    /// Where commands go.
    var client: any RedisCommandRunner { backend.runner }

    /// Names this instance's lease and claims after the server that uses it.
    public func attach(serverID: String) {
        keeper.attach(serverID: serverID, owner: owner)
    }

    /// Claims the request, or reports who has it. `runningFor` is the claim's term (pass the
    /// request's timeout and a margin), renewed every ``ClaimLease/interval`` while this instance
    /// runs the request; a server that stops leaves its claim for the rest of the term, during
    /// which waiters answer the request `UNKNOWN`. Throws
    /// ``LongLinkError/Code-swift.struct/outcomeUnknown`` when a waiter found that the server
    /// running the request stopped.
    ///
    /// On a cluster with ``RedisDurability/asynchronous`` durability a failover may lose the last
    /// writes, among them this request's stored reply or claim: there a claim with a `window` also
    /// checks the replication id its principal's entries were written under, and a `resent` copy
    /// that finds no entry less than `window` after that id changed (or its record was lost) throws
    /// ``LongLinkError/Code-swift.struct/outcomeUnknown``, as does every later copy: it is never run
    /// twice. A claim without a `window` neither checks nor renews that lineage record; elsewhere
    /// `resent` and `window` change nothing.
    public func begin(_ request: DedupeClaimRequest) async throws(LongLinkError) -> DedupeClaim {
        let entry = keys.dedupeEntry(
            principal: request.principal, clientID: request.clientID, requestID: request.requestID)
        // No window to judge a copy by: the plain claim, which leaves the lineage record alone.
        guard let window = request.window.map(Self.milliseconds) else {
            return try await claim(entry, runningFor: request.runningFor, lineage: nil)
        }
        lastWindow.withLock { $0 = window }
        return try await claim(
            entry, runningFor: request.runningFor,
            lineage: lineageCheck(principal: request.principal, resent: request.resent, window: window))
    }

    /// The lineage check a claim makes on a cluster with asynchronous replication; nil elsewhere.
    private func lineageCheck(principal: String?, resent: Bool, window: Int64) -> DedupeOperation.LineageCheck? {
        guard backend.checksLineage, backend.replicas == 0 else { return nil }
        return DedupeOperation.LineageCheck(
            record: keys.dedupeLineage(principal: principal), resent: resent, window: window)
    }

    /// ``check(_:runningFor:lineage:)`` as a ``LongLinkServer/DedupeClaim``.
    private func claim(
        _ entry: DedupeEntryKey, runningFor: Duration, lineage: DedupeOperation.LineageCheck?
    ) async throws(LongLinkError) -> DedupeClaim {
        switch try await check(entry, runningFor: runningFor, lineage: lineage) {
        case .claimed: return .run
        case .running: return .running
        case .finished(let reply): return .finished(reply)
        }
    }

    /// What an entry holds, claiming it for `runningFor` when it holds nothing.
    enum Entry: Equatable {
        case claimed
        /// Claimed by another instance: its running value.
        case running([UInt8])
        case finished([UInt8])
    }

    /// Reads the entry, or claims it within the budgets when it holds nothing, after this
    /// instance's lease is set (so that no waiter finds the claim without it), in the batch of
    /// this turn's claims (``DedupeScripts/claimAll``). Throws
    /// ``LongLinkError/Code-swift.struct/resourceExhausted`` when the claim would pass a budget, or
    /// the entry holds a reply that was not kept (see ``RedisDedupeBudgets``).
    func check(
        _ entry: DedupeEntryKey, runningFor: Duration, lineage: DedupeOperation.LineageCheck? = nil
    ) async throws(LongLinkError) -> Entry {
        try await keeper.ensureLease()
        let term = Self.milliseconds(min(runningFor, termLimit ?? runningFor))
        let reply: RESPValue
        do throws(LongLinkError) {
            reply = try await claims.submit(entry, .claim(term: term, lineage: lineage))
        } catch {
            // No answer: the claim may have been made all the same; asked again, it is this instance's.
            doubts.withLock { $0.claimFailed(entry.name, term: .milliseconds(term), at: .now) }
            throw error
        }
        guard let value = reply.bytes else { throw .redisUnexpected("SET NX GET", reply) }
        if value.first != nil, value == Array(keeper.running.utf8), !keeper.holds(entry),
            doubts.withLock({ $0.recognize(entry.name, at: .now) })
        {
            // This instance's own claim, made by an attempt whose reply was lost: no handler ran for it.
            keeper.claimed(entry, term: term)
            return .claimed
        }
        doubts.withLock { $0.answered(entry.name) }
        guard let kind = value.first else {
            keeper.claimed(entry, term: term)
            return .claimed
        }
        switch kind {
        case UInt8(ascii: "D"): return .finished(Array(value.dropFirst()))
        case UInt8(ascii: "U"): throw value == Array("UL".utf8) ? Self.entryMayBeLost : Self.ownerStopped
        case UInt8(ascii: "B"): throw Self.overBudget(value.dropFirst(), anonymous: entry.isAnonymous)
        case UInt8(ascii: "N"): throw Self.replyNotKept
        default: return .running(value)
        }
    }

    /// What a request whose owner stopped is answered.
    static let ownerStopped = LongLinkError(
        code: .outcomeUnknown, message: "the server running this request stopped; it may or may not have taken effect")

    /// What a resent copy is answered when its entry may have been lost in a failover (the entry is
    /// then `UL`: `UNKNOWN`, for this reason).
    static let entryMayBeLost = LongLinkError(
        code: .outcomeUnknown,
        message:
            "the fleet's record of this request may have been lost in a failover; it may or may not have taken effect")

    /// True when the owner of `running` (a claim's value) holds no lease any more: the entry is
    /// marked `UNKNOWN` (unless it changed meanwhile: then false, and the caller looks again).
    func ownerStopped(_ key: String, running: [UInt8]) async throws(LongLinkError) -> Bool {
        let owner = running.dropFirst().prefix { $0 != UInt8(ascii: " ") }
        let lease = try await backend.runner.run(
            RedisCommand("EXISTS", keys.lease(owner: String(decoding: owner, as: UTF8.self))).keyed(1..<2))
        guard lease.int64 == 0 else { return false }
        let marked = try await backend.runner.run(
            DedupeScripts.markUnknown, keys: [Array(key.utf8)],
            arguments: [running, Array(keys.dedupeNotice(entry: key).utf8), backend.publish])
        return marked.int64 == 1
    }

    /// Stores the reply of a request this instance claimed, kept for `window`, in the batch of this
    /// turn's replies (``DedupeScripts/finishAll``). Returns false when the claim is no longer this
    /// instance's (it expired; another server may have run the request).
    @discardableResult
    public func finish(_ request: DedupeFinishRequest) async throws(LongLinkError) -> Bool {
        let entry = keys.dedupeEntry(
            principal: request.principal, clientID: request.clientID, requestID: request.requestID)
        settling(entry)
        let result = try await replies.submit(
            entry, .finish(value: [UInt8(ascii: "D")] + request.reply, window: Self.milliseconds(request.window)))
        doubts.withLock { $0.settled(entry.name) }
        guard let stored = result.int64 else { throw .redisUnexpected("EVALSHA", result) }
        // 2: kept as `N`, over the budgets; the claim was this instance's all the same.
        return stored == 1 || stored == 2
    }

    /// Forgets a request this instance claimed and did not finish (its handler failed to start, it
    /// was cancelled), so that a resend runs it. Returns false when the claim was not this instance's.
    @discardableResult
    public func abandon(_ request: DedupeAbandonRequest) async throws(LongLinkError) -> Bool {
        let entry = keys.dedupeEntry(
            principal: request.principal, clientID: request.clientID, requestID: request.requestID)
        settling(entry)
        let result = try await backend.runner.run(
            DedupeScripts.abandon, keys: [entry.accounts, entry.index, entry.name].map { Array($0.utf8) },
            arguments: [
                Array(keeper.running.utf8), Array(keys.dedupeNotice(entry: entry.name).utf8), backend.publish,
                Array(entry.member.utf8),
            ])
        doubts.withLock { $0.settled(entry.name) }
        return result.int64 == 1
    }

    /// A claim that ran here is finished or given up: no longer renewed, and, until the call
    /// succeeds, never taken for a lost claim while its value may stay in Redis (its term).
    private func settling(_ entry: DedupeEntryKey) {
        // Not held: never claimed here, or its renewal found the value gone (it comes back only by a claim).
        guard let term = keeper.released(entry) else { return }
        doubts.withLock { $0.settling(entry.name, term: .milliseconds(term), at: .now) }
    }

    /// Waits while the request runs elsewhere: returns
    /// ``LongLinkServer/DedupeClaim/finished(_:)`` once its reply is stored,
    /// ``LongLinkServer/DedupeClaim/run`` when it was given up and this caller claimed it for
    /// `runningFor`, or ``LongLinkServer/DedupeClaim/running`` at the deadline or as soon as the
    /// calling task is cancelled. Throws ``LongLinkError/Code-swift.struct/outcomeUnknown`` as soon as
    /// the owner of the claim holds no lease (see ``ClaimLease``): it stopped while running the
    /// request, which is never run again. On a cluster with ``RedisDurability/asynchronous``
    /// durability, once the server has claimed a request with a window (``begin(_:)``), an entry that vanishes less than a window after a failover is taken for lost, not given up:
    /// the waiter's claim is checked as a resent copy's and throws
    /// ``LongLinkError/Code-swift.struct/outcomeUnknown`` instead of running the request again.
    ///
    /// Subscribes to the entry's notice channel first and checks it as ``begin(_:)`` does after, so that an outcome stored in between
    /// is not missed; then checks again on each notice, and every 50 ms doubling to 500 ms since a
    /// notice may be lost. A cancellation that arrives while a check is on the wire returns
    /// `running`, even if that check claimed the entry: such a claim lasts `runningFor`.
    public func awaitOutcome(_ request: DedupeWaitRequest) async throws(LongLinkError) -> DedupeClaim {
        if Task.isCancelled { return .running }
        let (principal, runningFor, deadline) = (request.principal, request.runningFor, request.deadline)
        let entry = keys.dedupeEntry(principal: principal, clientID: request.clientID, requestID: request.requestID)
        let key = entry.name
        // A waiter is a copy of a request that ran: an entry that vanishes may have been lost in a
        // failover rather than given up, so its claim is checked as a resent copy's is.
        let lineage = lastWindow.withLock { $0 }.flatMap {
            lineageCheck(principal: principal, resent: true, window: $0)
        }
        let channel = keys.dedupeNotice(entry: key)
        let waiter = NoticeWaiter()
        let subscriber = try await notices.join(channel, waiter)
        var interval = pollIntervals.first
        var outcome: Result<DedupeClaim, LongLinkError> = .success(.running)
        while !Task.isCancelled {
            do throws(LongLinkError) {
                let found: DedupeClaim
                switch try await check(entry, runningFor: runningFor, lineage: lineage) {
                case .claimed: found = .run
                case .finished(let reply): found = .finished(reply)
                case .running(let value):
                    // A marked entry is looked at again at once: it throws `outcomeUnknown` there.
                    if try await ownerStopped(key, running: value) { continue }
                    found = .running
                }
                if found != .running {
                    outcome = .success(found)
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

    /// Sends the claims and replies already queued, then closes both connections to Redis and wakes
    /// every waiter; later calls throw ``LongLinkError/Code-swift.struct/shutdown``.
    public func shutdown() async {
        keeper.shutdown()
        await claims.shutdown()
        await replies.shutdown()
        await backend.runner.shutdown()
        await notices.shutdown()
    }

    /// At least 1 ms: `PX 0` is an error in Redis.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
