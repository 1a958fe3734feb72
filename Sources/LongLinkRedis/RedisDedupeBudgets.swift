public import LongLinkServer

/// How much of the fleet's de-dup window in Redis one tenant may hold: entries (running claims,
/// stored replies and `UNKNOWN` marks) and their bytes, per client and per principal.
///
/// ``RedisDedupeStore`` enforces them inside its Lua scripts, atomically for every server of the
/// fleet, by the rule of the server's in-memory window: a client whose claim or reply would pass
/// a bound gives up its own oldest finished entries (stored replies and "not kept" marks, never a
/// running claim), as many as make room, so a client may make any number of requests within the
/// window and its newest replies are kept. Only when all of them would not make room is a claim
/// refused (the request does not run and is answered `RESOURCE_EXHAUSTED`, with a hint of when
/// room frees up: the tenant's oldest entry expires), or a reply not kept (its entry holds a small
/// "not kept" mark for the window, and a copy of the request is answered `RESOURCE_EXHAUSTED`
/// rather than run again). Nothing of another client is ever evicted to make room, and a copy
/// whose reply is stored is replayed whatever the budgets say.
///
/// An entry's bytes are its key's name and its value as stored (the reply and its method).
/// Redis's own bookkeeping adds a bounded amount per entry on top (see `Limits.md`), which the
/// entry counts bound.
///
/// The defaults match the server's in-memory window: 10,000 entries and 16 MiB per client,
/// 20,000 entries and 32 MiB per principal. Connections no login bound share one budget of
/// their own (``anonymousEntries``, ``anonymousBytes``), in one hash tag that no client chooses.
public struct RedisDedupeBudgets: Sendable, Hashable {
    /// Entries one client (`client_id`) of a principal may hold.
    public var entriesPerClient: Int = 10_000
    /// Bytes one client of a principal may hold.
    public var bytesPerClient: Int = 16 << 20
    /// Entries all the clients of one principal may hold together.
    public var entriesPerPrincipal: Int = 20_000
    /// Bytes all the clients of one principal may hold together.
    public var bytesPerPrincipal: Int = 32 << 20
    /// Entries all connections without a login may hold together (each client also within
    /// ``entriesPerClient``).
    public var anonymousEntries: Int = 1_000
    /// Bytes all connections without a login may hold together.
    public var anonymousBytes: Int = 1 << 20

    /// The defaults.
    public init() {}

    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` unless every bound is at least 1.
    public func validate() throws(LongLinkError) {
        let bounds = [
            entriesPerClient, bytesPerClient, entriesPerPrincipal, bytesPerPrincipal, anonymousEntries, anonymousBytes,
        ]
        guard bounds.allSatisfy({ $0 >= 1 }) else {
            throw LongLinkError(code: .invalidConfiguration, message: "every Redis de-dup budget must be at least 1")
        }
    }

    /// The bounds of one hash tag, as the scripts take them: the tag's entries and bytes, then a
    /// client's.
    func arguments(anonymous: Bool) -> [[UInt8]] {
        let tag = anonymous ? (anonymousEntries, anonymousBytes) : (entriesPerPrincipal, bytesPerPrincipal)
        return [tag.0, tag.1, entriesPerClient, bytesPerClient].map { Array(String($0).utf8) }
    }
}
