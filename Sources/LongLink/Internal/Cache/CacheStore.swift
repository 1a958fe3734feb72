/// The response cache's entries: bounded by bytes and by count, least recently used evicted first.
///
/// A plain value, with no clock of its own (callers pass the time) and no I/O, so tests drive it
/// directly. Recency is a stamp per entry: every use gives the entry the next stamp, and `order`
/// maps live stamps back to keys, so the least recently used entry is the one at the lowest live
/// stamp; a cursor finds it in amortised constant time.
struct CacheStore {
    struct Entry: Equatable {
        var payload: [UInt8]
        /// The method the reply answered (a push on a topic of that name invalidates it).
        var method: String
        var storedAt: ContinuousClock.Instant
        var stamp: UInt64
        /// What the entry counts against the byte limit, its key apart (see ``cost(key:)``).
        var cost: Int { payload.count + method.utf8.count + 64 }

        /// What the entry under `key` counts against the byte limit: its key too (a derived key
        /// holds the payload of the call in base64, as large as the call itself).
        func cost(key: String) -> Int { cost + key.utf8.count }
    }

    let byteLimit: Int
    /// The most entries kept.
    let entryLimit: Int
    private(set) var entries: [String: Entry] = [:]
    private var order: [UInt64: String] = [:]
    private var nextStamp: UInt64 = 0
    private var lowestStamp: UInt64 = 0
    private(set) var bytes = 0
    /// How many entries answer each method: a push on a topic no entry is about costs two lookups.
    private var methods: [String: Int] = [:]

    init(byteLimit: Int, entryLimit: Int = .max) {
        self.byteLimit = byteLimit
        self.entryLimit = max(1, entryLimit)
    }

    var count: Int { entries.count }

    /// The entry's payload when it is at most `maxAge` old (any age when nil); marks it used.
    mutating func lookup(_ key: String, maxAge: Duration?, now: ContinuousClock.Instant) -> Entry? {
        guard var entry = entries[key] else { return nil }
        if let maxAge, now - entry.storedAt > maxAge { return nil }
        order[entry.stamp] = nil
        entry.stamp = takeStamp()
        order[entry.stamp] = key
        entries[key] = entry
        return entry
    }

    /// Stores a reply; returns the keys evicted to make room (an entry larger than the whole limit
    /// is not stored).
    @discardableResult
    mutating func store(
        _ key: String, payload: [UInt8], method: String, at now: ContinuousClock.Instant
    ) -> [String] {
        remove(key)
        let entry = Entry(payload: payload, method: method, storedAt: now, stamp: takeStamp())
        let cost = entry.cost(key: key)
        guard cost <= byteLimit else { return [] }
        var evicted: [String] = []
        while bytes + cost > byteLimit || entries.count >= entryLimit, let oldest = leastRecentlyUsed() {
            remove(oldest)
            evicted.append(oldest)
        }
        entries[key] = entry
        order[entry.stamp] = key
        bytes += cost
        methods[method, default: 0] += 1
        return evicted
    }

    @discardableResult
    mutating func remove(_ key: String) -> Bool {
        guard let entry = entries.removeValue(forKey: key) else { return false }
        order[entry.stamp] = nil
        bytes -= entry.cost(key: key)
        if methods[entry.method] == 1 { methods[entry.method] = nil } else { methods[entry.method]? -= 1 }
        return true
    }

    /// Removes every entry whose key passes `test`; returns their keys.
    mutating func removeAll(where test: (String, Entry) -> Bool) -> [String] {
        let keys = entries.filter { test($0.key, $0.value) }.map(\.key)
        for key in keys { remove(key) }
        return keys
    }

    /// True when some entry's key or method is `name`.
    func mentions(_ name: String) -> Bool {
        entries[name] != nil || methods[name] != nil
    }

    mutating func removeAll() {
        methods.removeAll()
        entries.removeAll()
        order.removeAll()
        bytes = 0
        lowestStamp = nextStamp
    }

    private mutating func takeStamp() -> UInt64 {
        defer { nextStamp += 1 }
        return nextStamp
    }

    private mutating func leastRecentlyUsed() -> String? {
        while lowestStamp < nextStamp {
            if let key = order[lowestStamp] { return key }
            lowestStamp += 1
        }
        return nil
    }
}
