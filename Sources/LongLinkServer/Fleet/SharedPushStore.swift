/// Where a fleet of servers keeps reliable pushes: one store every server reads and writes, so
/// that a push produced on any server reaches its principal on whichever server holds it, and a
/// client that moves to another server finds its unacknowledged pushes there.
///
/// The same contract as ``PushStore`` (seqs per principal from 1 upward within an epoch, bounds per
/// principal, `RESOURCE_EXHAUSTED` when full, nothing dropped silently), asynchronous because each
/// operation is a round trip. An operation that cannot reach the store throws
/// ``LongLinkError/Code-swift.struct/unavailable``: a push is either stored or refused, never
/// reported stored when it was not.
///
/// Cross-server delivery: the server calls ``startObserving(_:)`` once when it starts serving and
/// ``refreshObservation(of:)`` whenever the set of principals it holds connections of changes;
/// the store then tells the observer of every push stored for those principals, by any server.
/// Notices may be lost (a store on Redis pub/sub is at most once): the store calls
/// ``SharedPushObserver/noticesLost`` when it may have missed some (after its notice channel
/// reconnected), and the server reads every principal again. A connection's `Sync` waits for the
/// principal's observation to be in place before it reads, so that a push stored between the read
/// and the subscription cannot be missed.
///
/// It is the one interface the server speaks to any push store, its own too: ``InMemoryPushStore``
/// implements it in this process (and an application's ``PushStore`` is wrapped to), so a single
/// server and a fleet run one pump and one acknowledgement path. `LongLinkRedis` provides one on
/// Redis Streams (`RedisPushStore`).
public protocol SharedPushStore: Sendable {
    /// Stores a push for `principal` under the next sequence number and returns it; tells the
    /// observers of every server that holds the principal.
    func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush

    /// The unacknowledged pushes of `principal` with `seq > after`, in seq order, at most `limit`.
    func unacknowledged(principal: String, after seq: UInt64, limit: Int) async throws(LongLinkError) -> [StoredPush]

    /// Forgets the given pushes of `principal`; unknown seqs are ignored.
    func acknowledge(principal: String, seqs: [UInt64]) async throws(LongLinkError)

    /// Forgets the given pushes of `principal` if its pushes are still numbered in `epoch` (0:
    /// whatever the epoch); unknown seqs are ignored. A store that numbers anew after a reset must
    /// not let acks of the old epoch delete the new one's pushes of the same numbers. The server
    /// calls this one; the default calls ``acknowledge(principal:seqs:)`` whatever the epoch.
    func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) async throws(LongLinkError)

    /// Starts reporting stored pushes to `observer` (called once, before the server serves).
    func startObserving(_ observer: SharedPushObserver) async

    /// Brings the observation of `principal` in line with ``SharedPushObserver/isWatching``: once
    /// this returns, a push stored for a watched principal is reported (or its loss is), and an
    /// unwatched one costs nothing more. Called after every change, in any order: the store reads
    /// `isWatching` when it acts, so the last call leaves the truth in place.
    func refreshObservation(of principal: String) async

    /// Tells every server of the fleet that holds `principal` that `clientID` logged in with an
    /// exclusive binding: they end the principal's sessions of other clients (reported through
    /// ``SharedPushObserver/sessionStarted``, to the announcing server too). A store whose notices
    /// may be lost also records the login for a while, for ``sessionRecords(of:)``.
    func announceSession(principal: String, clientID: String) async throws(LongLinkError)

    /// The last exclusive login recorded for each of `principals` that has one (each record names
    /// its principal: names are compared as bytes, so a `String`-keyed dictionary, which merges
    /// canonically equivalent names, would not do): servers read them
    /// when notices may have been lost, when they start watching a principal, and every second,
    /// and end the principal's sessions of other clients that were bound before that login. The
    /// default records nothing (a store whose notices are never lost needs no record).
    func sessionRecords(of principals: [String]) async throws(LongLinkError) -> [SessionRecord]

    /// Stops reporting and closes the store's connections; later operations throw
    /// ``LongLinkError/Code-swift.struct/shutdown``. The server calls it when its ``LongLinkServer/run()``
    /// ends: a server owns the stores it is given.
    func shutdown() async
}

extension SharedPushStore {
    /// Forgets the given pushes of `principal` whatever the epoch (for stores that do not number in
    /// epochs).
    public func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) async throws(LongLinkError) {
        try await acknowledge(principal: principal, seqs: seqs)
    }

    /// No records: a store whose notices are never lost needs none.
    public func sessionRecords(of principals: [String]) async throws(LongLinkError) -> [SessionRecord] {
        []
    }
}

/// An exclusive login as a ``SharedPushStore`` recorded it (see
/// ``SharedPushStore/sessionRecords(of:)``).
public struct SessionRecord: Sendable, Hashable {
    /// The principal it is a record of.
    public var principal: String
    /// The client that logged in.
    public var clientID: String
    /// How long ago it logged in, by the store's clock, when the record was read: sessions bound
    /// earlier than that end (an age, not a time, so that servers need no clock in common).
    public var age: Duration

    /// A record of `clientID`'s exclusive login as `principal`, `age` ago.
    public init(principal: String, clientID: String, age: Duration) {
        self.principal = principal
        self.clientID = clientID
        self.age = age
    }
}

/// What a ``SharedPushStore`` reports to the server that observes it. Each closure is called on a
/// thread of the store's and must return quickly.
public struct SharedPushObserver: Sendable {
    /// Whether the server holds a connection of this principal now.
    public var isWatching: @Sendable (_ principal: String) -> Bool
    /// A push was stored for this principal (by any server).
    public var pushStored: @Sendable (_ principal: String) -> Void
    /// Notices may have been missed: read every watched principal again.
    public var noticesLost: @Sendable () -> Void
    /// A client logged in as this principal with an exclusive binding (on any server): sessions of
    /// the principal's other clients end.
    public var sessionStarted: @Sendable (_ principal: String, _ clientID: String) -> Void

    /// An observer of the four closures.
    public init(
        isWatching: @escaping @Sendable (_ principal: String) -> Bool,
        pushStored: @escaping @Sendable (_ principal: String) -> Void,
        noticesLost: @escaping @Sendable () -> Void,
        sessionStarted: @escaping @Sendable (_ principal: String, _ clientID: String) -> Void = { _, _ in }
    ) {
        self.isWatching = isWatching
        self.pushStored = pushStored
        self.noticesLost = noticesLost
        self.sessionStarted = sessionStarted
    }
}
