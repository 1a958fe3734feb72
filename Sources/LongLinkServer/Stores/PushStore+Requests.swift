/// A push for ``PushStore/append(_:)`` to store.
public struct PushAppend: Sendable, Hashable {
    /// The principal it is for.
    public var principal: String
    /// The topic.
    public var topic: String
    /// The encoded message.
    public var payload: [UInt8]

    /// A push of `payload` on `topic` for `principal`.
    public init(principal: String, topic: String, payload: [UInt8]) {
        self.principal = principal
        self.topic = topic
        self.payload = payload
    }
}

/// What ``PushStore/unacknowledged(_:)`` reads: a principal's unacknowledged pushes after a seq.
public struct PushRead: Sendable, Hashable {
    /// Whose pushes.
    public var principal: String
    /// Only pushes with a greater seq (0: from the first).
    public var after: UInt64
    /// At most this many.
    public var limit: Int

    /// The pushes of `principal` with `seq > after`, at most `limit`.
    public init(principal: String, after: UInt64 = 0, limit: Int) {
        self.principal = principal
        self.after = after
        self.limit = limit
    }
}

/// Pushes a client acknowledged, for ``PushStore/acknowledge(_:)`` to forget.
public struct AcknowledgedPushes: Sendable, Hashable {
    /// Whose pushes.
    public var principal: String
    /// Their seqs, in no particular order.
    public var seqs: [UInt64]
    /// The seq space they were numbered in (``StoredPush/epoch``); 0: whatever the principal's
    /// epoch.
    public var epoch: UInt64

    /// The pushes `seqs` of `principal`, numbered in `epoch` (0: whatever the epoch).
    public init(principal: String, seqs: [UInt64], epoch: UInt64 = 0) {
        self.principal = principal
        self.seqs = seqs
        self.epoch = epoch
    }
}

/// An exclusive login, for ``PushStore/announceSession(_:)`` to tell the fleet.
public struct SessionAnnouncement: Sendable, Hashable {
    /// The principal logged in as.
    public var principal: String
    /// The client that logged in: the principal's sessions of other clients end.
    public var clientID: String

    /// `clientID` logged in as `principal` with an exclusive binding.
    public init(principal: String, clientID: String) {
        self.principal = principal
        self.clientID = clientID
    }
}
