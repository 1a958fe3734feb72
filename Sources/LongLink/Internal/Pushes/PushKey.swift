/// A reliable push's identity: its seq within the seq space (epoch) the server numbered it in.
struct PushKey: Hashable, Sendable, Comparable {
    var epoch: UInt64
    var seq: UInt64

    static func < (lhs: PushKey, rhs: PushKey) -> Bool {
        (lhs.epoch, lhs.seq) < (rhs.epoch, rhs.seq)
    }
}
