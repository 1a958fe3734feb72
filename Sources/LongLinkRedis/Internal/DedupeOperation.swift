internal import LongLinkServer
internal import LongLinkTransport

/// One operation on a de-dup entry waiting in a ``DedupeQueue`` for its reply.
struct DedupeOperation: GroupCommitItem {
    /// What the operation asks of its entry.
    enum Kind: Sendable {
        /// Claim the entry for `term` ms or read what it holds (`SET NX PX GET`); with `lineage`, under
        /// the check of ``DedupeScripts/claimAllChecked``.
        case claim(term: Int64, lineage: LineageCheck? = nil)
        /// Store `value` (the reply) for `window` ms if the entry is still this instance's claim.
        case finish(value: [UInt8], window: Int64)

        var isClaim: Bool {
            if case .claim = self { return true }
            return false
        }

        /// The lineage check of a claim, if it asks one.
        var lineage: LineageCheck? {
            if case .claim(_, let lineage) = self { return lineage }
            return nil
        }
    }

    /// What a claim on a cluster with asynchronous replication sends besides its term (see
    /// ``DedupeScripts/claimAllChecked``).
    struct LineageCheck: Sendable {
        /// The lineage record of the entry's slot (``RedisKeys/dedupeLineage(principal:)``).
        let record: String
        /// The client marked the request a copy (`Request.resent`).
        let resent: Bool
        /// The server's de-dup window, in ms.
        let window: Int64
    }

    /// The most operations in one batch.
    static let maxBatch = 256

    let entry: DedupeEntryKey
    let operation: Kind
    let outcome = OneShot<Result<RESPValue, LongLinkError>>()

    /// Batches are bounded by count only.
    var size: Int { 0 }
}
