/// The de-duplication window's budgets: entries (running and finished) and stored reply bytes,
/// per client (a `client_id` under one principal), per principal and in all. Unbounded unless set.
struct DedupeLimits: Sendable, Equatable {
    var entries = Int.max
    var entriesPerPrincipal = Int.max
    var entriesPerClient = Int.max
    var bytes = Int.max
    var bytesPerPrincipal = Int.max
    var bytesPerClient = Int.max

    init() {}

    /// The budgets a server is configured with.
    init(_ configuration: ServerConfiguration) {
        entries = configuration.budgets.dedupeCapacity
        entriesPerPrincipal = configuration.budgets.dedupeCapacityPerPrincipal
        entriesPerClient = configuration.budgets.dedupeCapacityPerClient
        bytes = configuration.budgets.dedupeBytes
        bytesPerPrincipal = configuration.budgets.dedupeBytesPerPrincipal
        bytesPerClient = configuration.budgets.dedupeBytesPerClient
    }
}
