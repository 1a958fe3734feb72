/// The stores a ``LongLinkServer`` keeps reliable pushes and stored replies in.
///
/// ```swift
/// let server = LongLinkServer(configuration: configuration, router: router, stores: .inMemory())
/// ```
///
/// `LongLinkRedis` adds `.redis(_:)` and `.redisCluster(_:)`, stores a fleet of servers shares.
/// The server owns the stores it is given: ``LongLinkServer/run()`` starts their notices and shuts
/// them down when it returns.
public struct ServerStores: Sendable {
    /// Reliable pushes.
    public var pushes: any PushStore
    /// The de-duplication window beyond the server's memory; nil keeps it in the server's memory
    /// only (a resend that reaches another server, or this one after a restart, may then run a
    /// second time).
    public var dedupe: (any DedupeStore)?

    /// Stores of reliable pushes and, optionally, of the de-duplication window.
    public init(pushes: any PushStore, dedupe: (any DedupeStore)? = nil) {
        self.pushes = pushes
        self.dedupe = dedupe
    }

    /// Pushes in an ``InMemoryPushStore`` bounded per principal as given, the de-duplication window
    /// in the server's memory: nothing survives a restart of the process.
    public static func inMemory(capacityPerPrincipal: Int = 10_000, bytesPerPrincipal: Int = 16 << 20) -> ServerStores {
        ServerStores(
            pushes: InMemoryPushStore(capacityPerPrincipal: capacityPerPrincipal, bytesPerPrincipal: bytesPerPrincipal))
    }
}
