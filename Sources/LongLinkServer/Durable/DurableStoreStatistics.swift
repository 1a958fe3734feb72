/// The durable store's counters (see ``DurableStore/statistics``).
public struct DurableStoreStatistics: Sendable, Hashable {
    /// Write transactions committed: each holds every write (push, acknowledgement, claim, reply)
    /// queued during the previous one.
    public var transactions = 0
    /// Writes committed in them.
    public var writes = 0
    /// The most writes one transaction held.
    public var largestTransaction = 0
    /// Transactions that failed as a whole (a full disk, an I/O error): their writes were refused.
    public var failedTransactions = 0
    /// Checkpoints run on the ``DurableSyncPolicy/interval(_:)`` timer.
    public var checkpoints = 0
    /// Expired de-dup entries removed.
    public var expiredEntriesRemoved = 0
    /// Claims found running when the store opened (their runner stopped): now "outcome unknown".
    public var claimsUnknownOnOpen = 0

    /// All zero.
    public init() {}
}
