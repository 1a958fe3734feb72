internal import LongLinkWire

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

/// Where the server keeps reliable pushes until they are acknowledged, in its own process.
///
/// The server speaks to every push store through ``SharedPushStore``'s interface (one pump, one
/// acknowledgement path, one ``LongLinkServer/publish(to:topic:payload:)``); a `PushStore` is one
/// that answers at once, so the server calls it on its event loop without a round trip, and
/// ``LongLinkServer/push(to:topic:payload:)`` can store synchronously. ``InMemoryPushStore`` is both;
/// a `PushStore` of your own that is not a ``SharedPushStore`` is observed within the process.
///
/// Sequence numbers are per principal, assigned by ``append(principal:topic:payload:)`` from 1
/// upward and strictly increasing within the principal's epoch (``StoredPush/epoch``). Methods are called from event-loop threads and must not block
/// for long: an implementation keeps its data in memory (``InMemoryPushStore``) or in a fast local
/// cache. Overflow policy: when a principal's store is full, `append` throws
/// ``LongLinkError/Code-swift.struct/resourceExhausted`` to the producer; stored pushes are never
/// dropped silently.
public protocol PushStore: Sendable {
    /// Stores a push for `principal` under the next sequence number and returns it.
    func append(principal: String, topic: String, payload: [UInt8]) throws(LongLinkError) -> StoredPush

    /// The unacknowledged pushes of `principal` with `seq > after`, in seq order, at most `limit`.
    func unacknowledged(principal: String, after seq: UInt64, limit: Int) -> [StoredPush]

    /// Forgets the given pushes of `principal`; unknown seqs are ignored.
    func acknowledge(principal: String, seqs: [UInt64])

    /// Forgets the given pushes of `principal` if its pushes are still numbered in `epoch` (0:
    /// whatever the epoch), as ``SharedPushStore/acknowledge(principal:seqs:epoch:)``. The server
    /// calls this one; the default calls ``acknowledge(principal:seqs:)`` whatever the epoch.
    func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64)

    /// How many pushes of `principal` wait for an acknowledgement.
    func unacknowledgedCount(principal: String) -> Int
}

extension PushStore {
    /// Forgets the given pushes of `principal` whatever the epoch (for stores that do not number in
    /// epochs).
    public func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) {
        acknowledge(principal: principal, seqs: seqs)
    }
}
