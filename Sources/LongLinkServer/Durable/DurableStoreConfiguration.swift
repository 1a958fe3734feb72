/// How a ``DurableStore`` syncs and what it lets each tenant hold.
///
/// The budgets follow the server's: a principal over its push budget gets `RESOURCE_EXHAUSTED`
/// from the producer call (nothing stored is dropped). At a de-dup budget the client gives up its
/// own oldest finished entries (stored replies and "not kept" marks, never a running request), as
/// the server's in-memory window does: a client may make any number of requests within the window,
/// its newest replies kept. Only when all of them would not make room is a new request refused
/// (answered `RESOURCE_EXHAUSTED` with a retry hint, not run), or a reply kept as a "not kept" mark
/// (its resends are answered `RESOURCE_EXHAUSTED`, never run again). Nothing of another client is
/// ever evicted to make room. ``init(budgetsOf:)`` takes them from a server's configuration.
public struct DurableStoreConfiguration: Sendable {
    /// When writes are forced to the disk, and what a crash can take (see ``DurableSyncPolicy``).
    public var sync: DurableSyncPolicy = .everyCommit
    /// The most unacknowledged reliable pushes kept per principal.
    public var pushCapacityPerPrincipal: Int = 10_000
    /// The most bytes (topics and payloads) of unacknowledged reliable pushes kept per principal.
    public var pushBytesPerPrincipal: Int = 16 << 20
    /// The most de-dup entries (running requests, stored replies and their marks) for all clients.
    public var dedupeCapacity: Int = 100_000
    /// The most de-dup entries per principal, over all its clients.
    public var dedupeCapacityPerPrincipal: Int = 20_000
    /// The most de-dup entries per client (a `client_id` under one principal).
    public var dedupeCapacityPerClient: Int = 10_000
    /// The most bytes of de-dup entries for all clients. An entry's bytes are its principal,
    /// `client_id` and `request_id` and its stored reply (the reply's status, payload and method).
    public var dedupeBytes: Int = 256 << 20
    /// The most bytes of de-dup entries per principal.
    public var dedupeBytesPerPrincipal: Int = 32 << 20
    /// The most bytes of de-dup entries per client. A reply larger than this is never kept.
    public var dedupeBytesPerClient: Int = 16 << 20
    /// Whether opening runs SQLite's `PRAGMA quick_check` over the whole file, refusing a damaged
    /// one. It reads every page: turn it off only where the open time of a large file matters more.
    public var verifiesOnOpen = true
    /// Where the store reports what it found on opening (a new file, requests whose runner stopped)
    /// and failures nobody awaits; nil says nothing.
    public var logger: (@Sendable (String) -> Void)?

    /// The defaults: synced at every commit, and the budgets of a default ``ServerConfiguration``.
    public init() {}

    /// The defaults with the push and de-dup budgets of `server`
    /// (``ServerConfiguration/pushStoreCapacityPerPrincipal``, ``ServerConfiguration/dedupeCapacity``
    /// and the others), and its ``ServerConfiguration/logger``.
    public init(budgetsOf server: ServerConfiguration) {
        pushCapacityPerPrincipal = server.pushStoreCapacityPerPrincipal
        pushBytesPerPrincipal = server.pushStoreBytesPerPrincipal
        dedupeCapacity = server.dedupeCapacity
        dedupeCapacityPerPrincipal = server.dedupeCapacityPerPrincipal
        dedupeCapacityPerClient = server.dedupeCapacityPerClient
        dedupeBytes = server.dedupeBytes
        dedupeBytesPerPrincipal = server.dedupeBytesPerPrincipal
        dedupeBytesPerClient = server.dedupeBytesPerClient
        logger = server.logger
    }

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless every budget is at
    /// least 1.
    public func validate() throws(LongLinkError) {
        let budgets: [(String, Int)] = [
            ("pushCapacityPerPrincipal", pushCapacityPerPrincipal), ("pushBytesPerPrincipal", pushBytesPerPrincipal),
            ("dedupeCapacity", dedupeCapacity), ("dedupeCapacityPerPrincipal", dedupeCapacityPerPrincipal),
            ("dedupeCapacityPerClient", dedupeCapacityPerClient), ("dedupeBytes", dedupeBytes),
            ("dedupeBytesPerPrincipal", dedupeBytesPerPrincipal), ("dedupeBytesPerClient", dedupeBytesPerClient),
        ]
        for (name, value) in budgets where value < 1 {
            throw LongLinkError(code: .invalidConfiguration, message: "the durable store's \(name) must be at least 1")
        }
    }
}
