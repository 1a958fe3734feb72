/// How big the client's response cache may grow, and where it persists.
public struct ResponseCacheConfiguration: Sendable, Hashable {
    /// The most bytes of replies kept in memory (payloads, keys, methods and 64 bytes per entry);
    /// past it the least recently used entries are evicted. 8 MiB by default. A reply larger than
    /// the whole bound is not kept.
    public var maxBytes: Int = 8 << 20
    /// The most replies kept in memory; past it the least recently used entries are evicted.
    /// 10,000 by default.
    public var maxEntries: Int = 10_000
    /// A directory to keep entries in across app restarts; nil keeps them in memory only.
    public var directory: String?
    /// Whether a push on topic `T` invalidates the entries whose method or key is `T` (a push on
    /// `prices.AAPL` drops the cached `prices.AAPL` reply).
    public var pushesInvalidate: Bool = true

    /// A configuration: in memory only, 8 MiB, invalidated by pushes.
    public init(maxBytes: Int = 8 << 20, directory: String? = nil, pushesInvalidate: Bool = true) {
        self.maxBytes = maxBytes
        self.directory = directory
        self.pushesInvalidate = pushesInvalidate
    }
}
