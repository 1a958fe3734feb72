/// A ``DurableStore`` as the server's push store: its calls answered once the engine commits, its
/// observation kept in this process (a push stored here is reported to the servers of this process
/// as it is stored; no notice is lost).
extension DurableStore: PushStore {
    /// Stores a push under its principal's next seq and returns once it is committed (see
    /// ``DurableSyncPolicy``). Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the
    /// principal is at its budget or the disk is full, and ``LongLinkError/Code-swift.struct/unavailable``
    /// when the file cannot be written; the push is then not stored.
    public func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush {
        let stored = try await engine.append(principal: push.principal, topic: push.topic, payload: push.payload)
        observers.pushStored(principal: push.principal)
        return stored
    }

    /// The unacknowledged pushes of the read's principal with `seq > after`, in seq order, at most
    /// `limit`.
    public func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
        try await engine.unacknowledged(principal: read.principal, after: read.after, limit: read.limit)
    }

    /// Forgets the given pushes numbered in their epoch (0: any); unknown seqs are ignored. Deleted
    /// in the next commit, with the other writes of its turn.
    public func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
        try await engine.acknowledge(principal: acks.principal, seqs: acks.seqs, epoch: acks.epoch)
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    public func unacknowledgedCount(principal: String) async throws(LongLinkError) -> Int {
        try await engine.unacknowledgedCount(principal: principal)
    }

    /// Reports to `observer` every push stored from now on for a principal it watches, and every
    /// exclusive login announced.
    public func startObserving(_ observer: PushStoreObserver) async {
        observers.add(observer)
    }

    /// Tells every observer, the announcing server's too, that the announced client logged in as
    /// its principal with an exclusive binding.
    public func announceSession(_ session: SessionAnnouncement) async throws(LongLinkError) {
        observers.sessionStarted(principal: session.principal, clientID: session.clientID)
    }
}
