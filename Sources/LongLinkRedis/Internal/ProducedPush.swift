internal import LongLinkServer
internal import LongLinkTransport

/// One push waiting in a ``ProduceQueue`` for its seq.
struct ProducedPush: GroupCommitItem {
    /// The most pushes in one produce call.
    static let maxBatch = 64
    /// About the most bytes (topics and payloads) in one produce call.
    static let maxBatchBytes = 1 << 20

    let topic: String
    let payload: [UInt8]
    let outcome = OneShot<Result<StoredPush, LongLinkError>>()

    var size: Int { topic.utf8.count + payload.count }
}
