/// Where a server keeps reliable pushes until their clients acknowledge them: the one interface the
/// server speaks to every push store, in its own memory (``InMemoryPushStore``), on disk, or shared
/// by a fleet (`LongLinkRedis`'s `RedisPushStore`).
///
/// Sequence numbers are per principal, assigned by ``append(_:)`` from 1 upward and strictly
/// increasing within the principal's epoch (``StoredPush/epoch``). ``append(_:)`` returns once the
/// push is stored as durably as the store promises (in memory, written to disk, replicated), and
/// ``LongLinkServer/push(to:topic:payload:)`` returns no sooner: a push is either stored or
/// refused, never reported stored when it was not. Overflow policy: when a principal's store is
/// full, `append` throws ``LongLinkError/Code-swift.struct/resourceExhausted`` to the producer;
/// stored pushes are never dropped silently. An operation that cannot reach the store throws
/// ``LongLinkError/Code-swift.struct/unavailable``.
///
/// Requirements take one request value each (``PushAppend``, ``PushRead``, ``AcknowledgedPushes``,
/// ``SessionAnnouncement``), so that what a store is told grows by fields, not by overloads.
///
/// The fleet's part (observation, session announcements and records, presence, shutdown) has defaults that do
/// nothing, for a store that serves one server: pushes that server produces reach its connections
/// at once whatever the store does. A store shared by several servers implements them. Cross-server
/// delivery: the server calls ``startObserving(_:)`` once when it starts serving and
/// ``refreshObservation(of:)`` whenever the set of principals it holds connections of changes; the
/// store then tells the observer of every push stored for those principals, by any server. Notices
/// may be lost (a store on Redis pub/sub is at most once): the store calls
/// ``PushStoreObserver/noticesLost`` when it may have missed some (after its notice channel
/// reconnected), and the server reads every principal again. A connection's `Sync` waits for the
/// principal's observation to be in place before it reads, so that a push stored between the read
/// and the subscription cannot be missed.
public protocol PushStore: Sendable {
    /// Stores a push under its principal's next sequence number and returns it, once it is stored
    /// as durably as the store promises; tells the observers of every server that holds the
    /// principal.
    func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush

    /// The unacknowledged pushes of the read's principal with `seq > after`, in seq order, at most
    /// `limit`.
    func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush]

    /// Forgets the given pushes if their principal's pushes are still numbered in the given epoch
    /// (0: whatever the epoch); unknown seqs are ignored. A store that numbers anew after a reset
    /// must not let acks of the old epoch delete the new one's pushes of the same numbers.
    func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError)

    /// Starts reporting stored pushes to `observer` (called once, before the server serves). Does
    /// nothing by default.
    func startObserving(_ observer: PushStoreObserver) async

    /// Brings the observation of `principal` in line with ``PushStoreObserver/isWatching``: once
    /// this returns, a push stored for a watched principal is reported (or its loss is), and an
    /// unwatched one costs nothing more. Called after every change, in any order: the store reads
    /// `isWatching` when it acts, so the last call leaves the truth in place. Does nothing by
    /// default.
    func refreshObservation(of principal: String) async

    /// Tells every server that holds the announced principal that its client logged in with an
    /// exclusive binding: they end the principal's sessions of other clients (reported through
    /// ``PushStoreObserver/sessionStarted``, to the announcing server too). A store whose notices
    /// may be lost also records the login for a while, for ``sessionRecords(of:)``. Does nothing
    /// by default (the announcing server ends its own sessions itself).
    func announceSession(_ session: SessionAnnouncement) async throws(LongLinkError)

    /// The last exclusive login recorded for each of `principals` that has one (each record names
    /// its principal: names are compared as bytes, so a `String`-keyed dictionary, which merges
    /// canonically equivalent names, would not do): servers read them when notices may have been
    /// lost, when they start watching a principal, and every second, and end the principal's
    /// sessions of other clients that were bound before that login. The default records nothing
    /// (a store whose notices are never lost needs no record).
    func sessionRecords(of principals: [String]) async throws(LongLinkError) -> [SessionRecord]

    /// Whether the store keeps the presence of every server sharing it: the server then writes
    /// its sessions with ``updatePresence(_:)`` and answers ``LongLinkServer/presence(of:)`` with
    /// ``presence(of:)``. False by default: a store of one server, which answers from its own
    /// sessions.
    var sharesPresence: Bool { get }

    /// Records sessions that began or are still there (each until the update's lease has passed,
    /// unless renewed) and forgets sessions that ended. Called only when ``sharesPresence``, one
    /// call at a time per server. Does nothing by default.
    func updatePresence(_ update: PresenceUpdate) async throws(LongLinkError)

    /// The sessions of `principal` on every server sharing the store whose lease has not passed
    /// (at most ``Presence/listLimit`` listed); nil when the store keeps no presence (the default).
    func presence(of principal: String) async throws(LongLinkError) -> Presence?

    /// Stops reporting and closes the store's connections or files; later operations throw
    /// ``LongLinkError/Code-swift.struct/shutdown``. The server calls it when its
    /// ``LongLinkServer/run()`` ends: a server owns the stores it is given. Does nothing by default.
    func shutdown() async
}

extension PushStore {
    /// Reports nothing: pushes produced on the server reach its connections without a report.
    public func startObserving(_ observer: PushStoreObserver) async {}

    /// Nothing to bring in line.
    public func refreshObservation(of principal: String) async {}

    /// Tells no other server: the announcing one ends its own sessions.
    public func announceSession(_ session: SessionAnnouncement) async throws(LongLinkError) {}

    /// No records: a store whose notices are never lost needs none.
    public func sessionRecords(of principals: [String]) async throws(LongLinkError) -> [SessionRecord] {
        []
    }

    /// No shared presence: the server answers from its own sessions.
    public var sharesPresence: Bool { false }

    /// Nothing to record.
    public func updatePresence(_ update: PresenceUpdate) async throws(LongLinkError) {}

    /// No shared presence.
    public func presence(of principal: String) async throws(LongLinkError) -> Presence? { nil }

    /// Nothing to close.
    public func shutdown() async {}
}
