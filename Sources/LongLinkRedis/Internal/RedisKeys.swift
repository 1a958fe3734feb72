/// The names of the keys and channels LongLink keeps in Redis.
///
/// Every key of one principal carries the hash tag `{p:<principal>}`, so that a move to Redis
/// Cluster keeps them in one slot (a Lua script may only touch keys of one slot there). Names put
/// inside a tag are escaped (`%`, `{`, `}` and `:` as `%XX`), so that no principal or client id
/// ends the tag early or reads as another principal's key. A principal is its UTF-8 bytes, never
/// normalised: two spellings of one name in Unicode are two principals with their own keys.
struct RedisKeys: Sendable {
    let prefix: String

    /// `<prefix>{p:<principal>}`.
    func tag(principal: String) -> String { "\(prefix){p:\(Self.escaped(principal))}" }

    /// The meta hash: `seq` (the last seq given), `epoch`, `bytes` (topics and payloads stored).
    func meta(principal: String) -> String { tag(principal: principal) + ":m" }

    /// The stream of unacknowledged pushes, entry id `<seq>-0`.
    func stream(principal: String) -> String { tag(principal: principal) + ":s" }

    /// The channel told `<epoch>:<seq>` of every push produced.
    func channel(principal: String) -> String { tag(principal: principal) + ":c" }

    /// The session record: the client of the principal's last exclusive login, for a while.
    func session(principal: String) -> String { tag(principal: principal) + ":x" }

    /// The presence set: the principal's sessions on every server, `<serverID>/<instance>/<connection id>`,
    /// each scored by when its lease ends (Redis's time, ms).
    func presence(principal: String) -> String { tag(principal: principal) + ":presence" }

    /// The de-dup entry of one request.
    func dedupe(principal: String?, clientID: String, requestID: String) -> String {
        dedupeEntry(principal: principal, clientID: clientID, requestID: requestID).name
    }

    /// The de-dup entry of one request with the keys that account for it.
    func dedupeEntry(principal: String?, clientID: String, requestID: String) -> DedupeEntryKey {
        let tag = dedupeTag(principal: principal)
        let member = "\(Self.escaped(clientID)):\(requestID)"
        return DedupeEntryKey(
            name: tag + ":d:" + member, member: member, accounts: tag + ":da", index: tag + ":dx",
            isAnonymous: principal == nil)
    }

    /// The hash tag of a request's de-dup entries: its principal's, or before a login the one tag
    /// that every connection without a login shares (`{a}`): no client chooses the slot, or the
    /// shard of a cluster, its entries go to, and they share one budget (see ``RedisDedupeBudgets``).
    private func dedupeTag(principal: String?) -> String {
        principal.map { tag(principal: $0) } ?? "\(prefix){a}"
    }

    /// The lineage record of the de-dup entries of a principal (or of connections no login
    /// bound): the replication id the entries of their slot were written under and when it last
    /// changed (cluster with asynchronous replication only, see ``DedupeScripts/claimAllChecked``).
    /// One per slot, under a tag of its own that hashes to that slot, kept with no expiry: a
    /// principal idle for any time still finds it, and there are at most 16,384.
    func dedupeLineage(principal: String?) -> String {
        let slot = ClusterSlot.of(Array(dedupeTag(principal: principal).utf8))
        return "\(prefix){\(ClusterSlot.tag(of: slot))}:l"
    }

    /// The liveness lease of the de-dup store instance `owner` (see ``ClaimLease``).
    func lease(owner: String) -> String { "\(prefix)lease:\(owner)" }

    /// The channel told when the de-dup entry `key` finished or was abandoned: the entry's name
    /// and a suffix, so that it keeps the entry's hash tag.
    func dedupeNotice(entry key: String) -> String { key + ":n" }

    static func escaped(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 == 0x25 || $0 == 0x7B || $0 == 0x7D || $0 == 0x3A }) else { return name }
        var bytes: [UInt8] = []
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in name.utf8 {
            if byte == 0x25 || byte == 0x7B || byte == 0x7D || byte == 0x3A {
                bytes += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
