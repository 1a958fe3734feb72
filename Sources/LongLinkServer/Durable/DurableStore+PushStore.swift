/// A ``DurableStore`` behind the interface the server speaks to every push store: its calls
/// answered once the engine commits, its observation kept in this process (a push stored here is
/// reported to the servers of this process as it is stored; no notice is lost).
extension DurableStore: SharedPushStore {
    /// Stores a push under the principal's next seq and returns once it is committed (see
    /// ``DurableSyncPolicy``). Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the
    /// principal is at its budget or the disk is full, and ``LongLinkError/Code-swift.struct/unavailable``
    /// when the file cannot be written; the push is then not stored.
    public func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush {
        let push = try await engine.append(principal: principal, topic: topic, payload: payload)
        observers.pushStored(principal: principal)
        return push
    }

    /// The unacknowledged pushes of `principal` with `seq > after`, in seq order, at most `limit`.
    public func unacknowledged(principal: String, after seq: UInt64, limit: Int) async throws(LongLinkError)
        -> [StoredPush]
    {
        try await engine.unacknowledged(principal: principal, after: seq, limit: limit)
    }

    /// Forgets the given pushes of `principal`, whatever their epoch; unknown seqs are ignored.
    public func acknowledge(principal: String, seqs: [UInt64]) async throws(LongLinkError) {
        try await engine.acknowledge(principal: principal, seqs: seqs, epoch: 0)
    }

    /// Forgets the given pushes of `principal` numbered in `epoch` (0: any); unknown seqs are
    /// ignored. Deleted in the next commit, with the other writes of its turn.
    public func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) async throws(LongLinkError) {
        try await engine.acknowledge(principal: principal, seqs: seqs, epoch: epoch)
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    public func unacknowledgedCount(principal: String) async throws(LongLinkError) -> Int {
        try await engine.unacknowledgedCount(principal: principal)
    }

    /// Reports to `observer` every push stored from now on for a principal it watches, and every
    /// exclusive login announced.
    public func startObserving(_ observer: SharedPushObserver) async {
        observers.add(observer)
    }

    /// Nothing to do: the store asks ``SharedPushObserver/isWatching`` as each push is stored.
    public func refreshObservation(of principal: String) async {}

    /// Tells every observer, the announcing server's too, that `clientID` logged in as `principal`
    /// with an exclusive binding.
    public func announceSession(principal: String, clientID: String) async throws(LongLinkError) {
        observers.sessionStarted(principal: principal, clientID: clientID)
    }
}
