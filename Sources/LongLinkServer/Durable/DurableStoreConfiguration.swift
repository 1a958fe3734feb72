/// How a ``DurableStore`` syncs and what it lets each tenant hold.
///
/// The budgets are the server's (``StoreBudgets``), enforced in the same transactions as the
/// writes they bound and by the same rule as the server's in-memory window; ``init(budgetsOf:)``
/// takes them from a server's configuration.
public struct DurableStoreConfiguration: Sendable {
    /// When writes are forced to the disk, and what a crash can take (see ``DurableSyncPolicy``).
    public var sync: DurableSyncPolicy = .everyCommit
    /// What each principal and client may hold: unacknowledged pushes, de-dup entries and their
    /// bytes (here an entry's principal, `client_id` and `request_id` and its stored reply).
    public var budgets = StoreBudgets()
    /// Whether opening runs SQLite's `PRAGMA quick_check` over the whole file, refusing a damaged
    /// one. It reads every page: turn it off only where the open time of a large file matters more.
    public var verifiesOnOpen = true
    /// Where the store reports what it found on opening (a new file, requests whose runner stopped)
    /// and failures nobody awaits; nil says nothing.
    public var logger: (@Sendable (String) -> Void)?

    /// The defaults: synced at every commit, and the budgets of a default ``ServerConfiguration``.
    public init() {}

    /// The defaults with the budgets of `server` (``ServerConfiguration/budgets``) and its
    /// ``ServerConfiguration/logger``.
    public init(budgetsOf server: ServerConfiguration) {
        budgets = server.budgets
        logger = server.logger
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless every budget is at
    /// least 1 (an entry here always has bytes, so a byte budget of 0 would refuse every request).
    public func validate() throws(LongLinkError) {
        try budgets.validate(in: "the durable store's ")
        for (name, value) in budgets.dedupeByteBudgets where value < 1 {
            throw LongLinkError(
                code: .invalidConfiguration, message: "the durable store's budgets.\(name) must be at least 1")
        }
    }
}
