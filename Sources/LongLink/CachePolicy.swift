/// Whether a call reads and fills the client's ``ResponseCache``, per call in
/// ``RequestOptions/cache``.
///
/// Only OK replies are stored. The key is ``RequestOptions/cacheKey`` when set, else the method and
/// the payload's bytes; entries belong to the current principal (see ``ResponseCache/principal``).
public struct CachePolicy: Sendable, Hashable {
    enum Kind: Hashable, Sendable {
        case networkOnly
        case cacheFirst(maxAge: Duration)
        case networkFirst(maxAge: Duration?)
        case cacheOnly(maxAge: Duration?)
    }

    let kind: Kind

    /// The network, always; the cache is neither read nor written (the default).
    public static let networkOnly = CachePolicy(kind: .networkOnly)

    /// A stored reply at most `maxAge` old, without a round trip; else the network, whose reply is
    /// stored.
    public static func cacheFirst(maxAge: Duration) -> CachePolicy {
        CachePolicy(kind: .cacheFirst(maxAge: maxAge))
    }

    /// The network, whose reply is stored; the stored reply (at most `maxAge` old, any age when
    /// nil) when the client is not connected at the time of the call, or when the call fails with
    /// `unavailable`, a lost or refused connection, or a timeout while disconnected. With nothing
    /// stored, the network's error is thrown.
    public static func networkFirst(maxAge: Duration? = nil) -> CachePolicy {
        CachePolicy(kind: .networkFirst(maxAge: maxAge))
    }

    /// The stored reply (at most `maxAge` old, any age when nil), never the network; throws
    /// ``LongLinkError/Code-swift.struct/notFound`` when there is none.
    public static func cacheOnly(maxAge: Duration? = nil) -> CachePolicy {
        CachePolicy(kind: .cacheOnly(maxAge: maxAge))
    }
}

/// One reply of ``LongLinkClient/requestCacheAndNetwork(_:payload:options:)``.
public struct CachedReply: Sendable, Hashable {
    /// The reply's payload.
    public var payload: [UInt8]
    /// True for the stored reply, false for the network's.
    public var isFromCache: Bool
}
