/// A reliable push kept until the client acknowledges it.
public struct StoredPush: Sendable, Hashable {
    /// The per-principal sequence number, from 1 upward.
    public var seq: UInt64
    /// The topic.
    public var topic: String
    /// The encoded message.
    public var payload: [UInt8]
    /// The principal's seq space (`Push.epoch` on the wire): a store picks a new one, never 0,
    /// whenever the principal's numbering may start again at 1 (the store lost its contents, or
    /// forgot the principal). 0 means the store does not say.
    public var epoch: UInt64

    /// Creates a stored push.
    public init(seq: UInt64, topic: String, payload: [UInt8], epoch: UInt64 = 0) {
        self.seq = seq
        self.topic = topic
        self.payload = payload
        self.epoch = epoch
    }
}
