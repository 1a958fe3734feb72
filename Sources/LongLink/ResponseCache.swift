internal import LongLinkCore
import Foundation
internal import LongLinkTransport
internal import LongLinkWire

/// The client's cache of replies (``LongLinkClient/cache``), read and filled by calls whose
/// ``RequestOptions/cache`` policy says so, and invalidated by the app or by pushes.
///
/// Keys are ``RequestOptions/cacheKey`` when a call sets one (the live-room app's "fixed request
/// ids": the request on the wire still gets a unique `request_id`), else the method, `#`, and the
/// payload's bytes in base64. Entries belong to one principal: setting another ``principal`` (the
/// login step does it with ``LoginSession/loggedIn(as:)``) clears the cache, memory and disk.
/// Principals are compared by their UTF-8 bytes, as the server and the fleet compare them: two
/// spellings of one name in Unicode (`"caf\u{E9}"`, `"cafe\u{301}"`) are two principals. A reply is
/// kept under the principal current when its call was made: one that arrives after another
/// principal was set is not stored.
public final class ResponseCache: Sendable {
    private struct State {
        var store: CacheStore
        var principal = ""
        /// The client's session (``ClientCore/session``): a reply to a call of an earlier one is
        /// not stored.
        var session: UInt64 = 0
        var hits = 0
        var misses = 0
    }

    private let state: Locked<State>
    private let files: CacheFiles?
    private let clock: any LongLinkClock
    let configuration: ResponseCacheConfiguration

    init(configuration: ResponseCacheConfiguration, clock: any LongLinkClock) {
        self.configuration = configuration
        self.clock = clock
        self.state = Locked(
            State(store: CacheStore(byteLimit: configuration.maxBytes, entryLimit: configuration.maxEntries)))
        self.files = configuration.directory.map(CacheFiles.init(directory:))
    }

    /// The principal the entries belong to ("" until one is set). Setting another one clears the
    /// cache, and the entries on disk when they belong to someone else.
    public var principal: String {
        get { state.withLock { $0.principal } }
        set {
            let changed = state.withLock { state -> Bool in
                guard !PrincipalKey.same(state.principal, newValue) else { return false }
                state.principal = newValue
                state.store.removeAll()
                return true
            }
            if changed { files?.adopt(principal: newValue) }
        }
    }

    /// Entries in memory now.
    public var count: Int { state.withLock { $0.store.count } }

    /// Lookups that found a usable entry, and those that did not.
    public var hitsAndMisses: (hits: Int, misses: Int) { state.withLock { ($0.hits, $0.misses) } }

    /// Removes the entry of `key`.
    public func invalidate(key: String) {
        state.withLock { _ = $0.store.remove(key) }
        files?.remove(key)
    }

    /// Removes every entry whose key starts with `prefix` (for derived keys, the method name:
    /// `"prices."` removes every cached `prices.*` call).
    public func invalidate(keyPrefix prefix: String) {
        let removed = state.withLock { $0.store.removeAll { key, _ in key.hasPrefix(prefix) } }
        for key in removed { files?.remove(key) }
    }

    /// Removes the entries whose method or key is `topic`; a push on `topic` does this when
    /// ``ResponseCacheConfiguration/pushesInvalidate`` is set.
    public func invalidate(topic: String) {
        let removed = state.withLock { state -> [String] in
            guard state.store.mentions(topic) else { return [] }
            return state.store.removeAll { key, entry in key == topic || entry.method == topic }
        }
        for key in removed { files?.remove(key) }
    }

    /// Removes everything, in memory and on disk.
    public func removeAll() {
        state.withLock { $0.store.removeAll() }
        files?.removeAll()
    }

    // MARK: The request layer's side

    /// The key of a call: its explicit key, else the method and the payload.
    static func key(method: String, payload: [UInt8], explicit: String?) -> String {
        explicit ?? method + "#" + Data(payload).base64EncodedString()
    }

    /// The stored payload for `key`, at most `maxAge` old (any age when nil), from memory or disk.
    func lookup(_ key: String, maxAge: Duration?) -> [UInt8]? {
        let now = clock.now
        let (found, principal) = state.withLock { state -> ([UInt8]?, String) in
            (state.store.lookup(key, maxAge: maxAge, now: now)?.payload, state.principal)
        }
        if let found {
            state.withLock { $0.hits += 1 }
            return found
        }
        guard let stored = files?.read(key, principal: principal) else {
            state.withLock { $0.misses += 1 }
            return nil
        }
        let age = Duration.seconds(max(0, Date().timeIntervalSince1970 - stored.storedAt))
        let storedAt = now.advanced(by: .zero - age)
        return state.withLock { state -> [UInt8]? in
            guard PrincipalKey.same(state.principal, principal) else { return nil }
            state.store.store(key, payload: stored.payload, method: stored.method, at: storedAt)
            if let maxAge, age > maxAge {
                state.misses += 1
                return nil
            }
            state.hits += 1
            return stored.payload
        }
    }

    /// The key that coalesces identical calls of one principal in one session: its bytes, so that
    /// two spellings of one name never share a flight, and the session, so that a call of the next
    /// user never joins one of the last user's (whose principal may not be named).
    static func flightKey(principal: String, session: UInt64, key: String) -> String {
        Data(principal.utf8).base64EncodedString() + "\u{0}\(session)\u{0}" + key
    }

    /// The session ended and `next` is the client's session now: the replies go, memory and
    /// disk, and a reply to a call made before that arrives later is not stored, whether or not
    /// the login steps named their principals.
    func endSession(next: UInt64) {
        state.withLock { $0.session = next }
        principal = ""
        removeAll()
    }

    /// Stores an OK reply to a call made while `principal` was current in the client's `session`
    /// (nil: the current one); dropped when another principal is current now, or the session
    /// ended since (the reply is the last user's, not the new one's).
    func store(_ key: String, payload: [UInt8], method: String, principal: String, session: UInt64? = nil) {
        let now = clock.now
        let evicted = state.withLock { state -> [String]? in
            guard PrincipalKey.same(state.principal, principal), session.map({ $0 == state.session }) ?? true else {
                return nil
            }
            return state.store.store(key, payload: payload, method: method, at: now)
        }
        guard let evicted, let files else { return }
        for key in evicted { files.remove(key) }
        files.write(
            CacheFiles.Stored(
                principal: principal, key: key, method: method, payload: payload,
                storedAt: Date().timeIntervalSince1970))
    }
}
