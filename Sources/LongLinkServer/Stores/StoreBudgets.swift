/// How much the server's stores let tenants hold: unacknowledged reliable pushes per principal, and
/// de-duplication entries and their bytes per client (a `client_id` under one principal), per
/// principal and in all.
///
/// One value serves the server's own stores (``ServerConfiguration/budgets``: the default
/// ``InMemoryPushStore`` and the window in the server's memory) and the durable store
/// (``DurableStoreConfiguration/budgets``), so the two cannot drift apart; the defaults are the same.
///
/// A principal over its push budget gets `RESOURCE_EXHAUSTED` from the producer call
/// (``LongLinkServer/push(to:topic:payload:)``); nothing stored is dropped. The de-dup budgets
/// share one rule: at a bound a client gives up its own oldest finished entries (stored replies and
/// "not kept" marks, never a running request), never anyone else's, so a client may make any
/// number of requests within the window and its newest replies are kept. A new request for which
/// that cannot make room is answered `RESOURCE_EXHAUSTED` (its message says when to retry) without
/// running; a reply that cannot be kept is replaced by a marker, so that its resends are answered
/// `RESOURCE_EXHAUSTED` ("ran once, reply too large to keep") rather than run again.
///
/// What a de-dup entry's bytes are depends on the store: in the server's memory, its stored reply
/// (payload uncompressed, status message); in the durable store, its principal, `client_id` and
/// `request_id` and its stored reply (status, payload and method).
public struct StoreBudgets: Sendable, Hashable {
    /// The most unacknowledged reliable pushes kept per principal.
    public var pushCapacityPerPrincipal: Int = 10_000
    /// The most bytes (topics and payloads) of unacknowledged reliable pushes kept per principal.
    public var pushBytesPerPrincipal: Int = 16 << 20
    /// The most de-dup entries (running requests, stored replies and their marks) for all clients
    /// together.
    public var dedupeCapacity: Int = 100_000
    /// The most de-dup entries per principal, over all its clients.
    public var dedupeCapacityPerPrincipal: Int = 20_000
    /// The most de-dup entries per client, so that a client sending many requests fills its own
    /// share and nobody else's.
    public var dedupeCapacityPerClient: Int = 10_000
    /// The most bytes of de-dup entries for all clients together.
    public var dedupeBytes: Int = 256 << 20
    /// The most bytes of de-dup entries per principal, over all its clients.
    public var dedupeBytesPerPrincipal: Int = 32 << 20
    /// The most bytes of de-dup entries per client. A reply larger than this is never kept: its
    /// resends are answered `RESOURCE_EXHAUSTED`.
    public var dedupeBytesPerClient: Int = 16 << 20

    /// The defaults: 10,000 pushes and 16 MiB per principal; de-dup entries 10,000 per client,
    /// 20,000 per principal, 100,000 in all; their bytes 16, 32 and 256 MiB.
    public init() {}

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless every count is at least
    /// 1 and no byte budget is negative (a de-dup byte budget of 0 keeps no reply in the server's
    /// memory). `owner` names the configuration in the message.
    func validate(in owner: String) throws(LongLinkError) {
        let counts = [
            ("pushCapacityPerPrincipal", pushCapacityPerPrincipal), ("pushBytesPerPrincipal", pushBytesPerPrincipal),
            ("dedupeCapacity", dedupeCapacity), ("dedupeCapacityPerPrincipal", dedupeCapacityPerPrincipal),
            ("dedupeCapacityPerClient", dedupeCapacityPerClient),
        ]
        for (name, value) in counts where value < 1 {
            throw LongLinkError(code: .invalidConfiguration, message: "\(owner)budgets.\(name) must be at least 1")
        }
        for (name, value) in dedupeByteBudgets where value < 0 {
            throw LongLinkError(code: .invalidConfiguration, message: "\(owner)budgets.\(name) must not be negative")
        }
    }

    /// The de-dup byte budgets by name, for the checks that differ between stores.
    var dedupeByteBudgets: [(String, Int)] {
        [
            ("dedupeBytes", dedupeBytes), ("dedupeBytesPerPrincipal", dedupeBytesPerPrincipal),
            ("dedupeBytesPerClient", dedupeBytesPerClient),
        ]
    }
}
