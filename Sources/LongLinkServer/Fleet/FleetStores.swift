/// The shared stores a ``LongLinkServer`` of a fleet uses instead of its in-memory ones.
///
/// ```swift
/// let server = LongLinkServer(configuration: configuration, router: router, fleet: try .redis(redisConfiguration))
/// ```
public struct FleetStores: Sendable {
    /// Reliable pushes, shared by every server.
    public var pushes: any SharedPushStore
    /// The de-duplication window, shared by every server; nil keeps each server's window in its
    /// own memory (a resend that reaches another server may then run a second time).
    public var dedupe: (any SharedDedupeStore)?

    /// Stores for a fleet.
    public init(pushes: any SharedPushStore, dedupe: (any SharedDedupeStore)?) {
        self.pushes = pushes
        self.dedupe = dedupe
    }
}
