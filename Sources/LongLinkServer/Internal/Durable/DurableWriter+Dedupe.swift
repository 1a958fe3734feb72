/// The de-dup window in the file: one row per request in `replies`, summed in `usage` in the same
/// transaction, under the in-memory window's rule (as the Redis store's budgets, see
/// `RedisDedupeBudgets`): a client at a budget gives up its own oldest finished entries (replies
/// and "not kept" marks, oldest expiry first), never a running claim nor another client's; only
/// when all of them would not make room is a claim refused, or a reply left as a "not kept" mark.
///
/// A running claim lasts while the store is open: its runner is this process, which finishes or
/// abandons it. One left running by a process that stopped becomes "unknown" on opening (see
/// ``markRunningClaimsUnknown()``). Every other entry lasts until its expiry (wall-clock ms), and
/// is removed by the turns' sweeps, or when a claim finds it expired.
extension DurableWriter {
    private struct Entry {
        var state: Int64
        var reply: [UInt8]
        var charge: Int64
        var expiresAt: Int64
    }

    private static let running: Int64 = 0

    func claim(_ key: DurableRequestKey, term: Duration, window: Duration) throws(SQLiteError) -> DurableClaim {
        let now = self.now()
        if let entry = try entry(key) {
            if entry.state == Self.running || entry.expiresAt > now {
                switch entry.state {
                case Self.running: return .running
                case 1: return .finished(entry.reply)
                case 2: return .notKept
                default: return .unknown
                }
            }
            try delete(key, charge: entry.charge)
        }
        if let refusal = try refusal(key, entries: 1, bytes: key.charge, now: now) {
            return .refused(refusal)
        }
        try database.run(
            "INSERT INTO replies (principal, client_id, request_id, state, reply, charge, expires_at, window)"
                + " VALUES (?, ?, ?, 0, NULL, ?, ?, ?)",
            .blob(key.principal), .blob(key.clientID), .blob(key.requestID), .integer(key.charge),
            .integer(now + Self.milliseconds(term)), .integer(Self.milliseconds(window)))
        try account(key.principal, key.clientID, entries: 1, bytes: key.charge)
        return .run
    }

    func finish(_ key: DurableRequestKey, reply: [UInt8], window: Duration) throws(SQLiteError) -> DurableFinish {
        guard let entry = try entry(key), entry.state == Self.running else { return .notClaimed }
        let now = self.now()
        let expiresAt = now + Self.milliseconds(window)
        let charge = key.charge + Int64(reply.count)
        let kept = try refusal(key, entries: 0, bytes: charge - entry.charge, now: now) == nil
        let stored = kept ? charge : key.charge
        try database.run(
            "UPDATE replies SET state = ?, reply = ?, charge = ?, expires_at = ?, window = ?"
                + " WHERE principal = ? AND client_id = ? AND request_id = ?",
            .integer(kept ? 1 : 2), .blob(kept ? reply : []), .integer(stored), .integer(expiresAt),
            .integer(Self.milliseconds(window)), .blob(key.principal), .blob(key.clientID), .blob(key.requestID))
        try account(key.principal, key.clientID, entries: 0, bytes: stored - entry.charge)
        return kept ? .stored : .notKept
    }

    /// Forgets a running claim; false when the entry holds none.
    func abandon(_ key: DurableRequestKey) throws(SQLiteError) -> Bool {
        guard let entry = try entry(key), entry.state == Self.running else { return false }
        try delete(key, charge: entry.charge)
        return true
    }

    /// Removes up to `limit` expired entries, oldest first; returns how many.
    @discardableResult
    func sweepExpired(limit: Int) throws(SQLiteError) -> Int {
        var expired: [(key: DurableRequestKey, charge: Int64)] = []
        try database.query(
            "SELECT principal, client_id, request_id, charge FROM replies WHERE state <> 0 AND expires_at <= ?"
                + " ORDER BY expires_at LIMIT ?",
            .integer(now()), .integer(Int64(limit))
        ) { row in
            expired.append((DurableRequestKey(stored: row.blob(0), row.blob(1), row.blob(2)), row.integer(3)))
        }
        // Each client's sums once, however many of its entries expired.
        var sums: [[[UInt8]]: (entries: Int64, bytes: Int64)] = [:]
        for (key, charge) in expired {
            try database.run(
                "DELETE FROM replies WHERE principal = ? AND client_id = ? AND request_id = ?",
                .blob(key.principal), .blob(key.clientID), .blob(key.requestID))
            sums[[key.principal, key.clientID], default: (0, 0)].entries -= 1
            sums[[key.principal, key.clientID], default: (0, 0)].bytes -= charge
        }
        for (client, sum) in sums {
            try account(client[0], client[1], entries: sum.entries, bytes: sum.bytes)
        }
        if !expired.isEmpty { statistics.withLock { $0.expiredEntriesRemoved += expired.count } }
        return expired.count
    }

    // MARK: Entries and budgets

    private func entry(_ key: DurableRequestKey) throws(SQLiteError) -> Entry? {
        try database.first(
            "SELECT state, reply, charge, expires_at FROM replies WHERE principal = ? AND client_id = ? AND request_id = ?",
            .blob(key.principal), .blob(key.clientID), .blob(key.requestID)
        ) { Entry(state: $0.integer(0), reply: $0.blob(1), charge: $0.integer(2), expiresAt: $0.integer(3)) }
    }

    private func delete(_ key: DurableRequestKey, charge: Int64) throws(SQLiteError) {
        try database.run(
            "DELETE FROM replies WHERE principal = ? AND client_id = ? AND request_id = ?",
            .blob(key.principal), .blob(key.clientID), .blob(key.requestID))
        try account(key.principal, key.clientID, entries: -1, bytes: -charge)
    }

    /// Adds to the sums in all, of the principal and of the client; a sum back at zero is removed.
    private func account(_ principal: [UInt8], _ clientID: [UInt8], entries: Int64, bytes: Int64) throws(SQLiteError) {
        guard entries != 0 || bytes != 0 else { return }
        for (level, principal, clientID) in [(Int64(0), [], []), (1, principal, []), (2, principal, clientID)] {
            try database.run(
                "INSERT INTO usage (level, principal, client_id, entries, bytes) VALUES (?, ?, ?, ?, ?)"
                    + " ON CONFLICT (level, principal, client_id)"
                    + " DO UPDATE SET entries = entries + excluded.entries, bytes = bytes + excluded.bytes",
                .integer(level), .blob(principal), .blob(clientID), .integer(entries), .integer(bytes))
            if entries < 0 {
                try database.run(
                    "DELETE FROM usage WHERE level = ? AND principal = ? AND client_id = ? AND entries <= 0",
                    .integer(level), .blob(principal), .blob(clientID))
            }
        }
    }

    private func usage(_ level: Int64, _ principal: [UInt8], _ clientID: [UInt8]) throws(SQLiteError)
        -> (entries: Int64, bytes: Int64)
    {
        try database.first(
            "SELECT entries, bytes FROM usage WHERE level = ? AND principal = ? AND client_id = ?",
            .integer(level), .blob(principal), .blob(clientID)
        ) { ($0.integer(0), $0.integer(1)) } ?? (0, 0)
    }

    /// The budget that adding `entries` and `bytes` to the key's client would pass, with when the
    /// scope's oldest entry expires; nil when it fits. Expired entries are swept first when
    /// something would not fit, so that only live ones refuse.
    private func refusal(_ key: DurableRequestKey, entries: Int64, bytes: Int64, now: Int64) throws(SQLiteError)
        -> DurableRefusal?
    {
        guard var scope = try overBudget(key, entries: entries, bytes: bytes) else { return nil }
        if try sweepExpired(limit: Int.max) > 0 {
            guard let again = try overBudget(key, entries: entries, bytes: bytes) else { return nil }
            scope = again
        }
        if try makeRoom(key, entries: entries, bytes: bytes) { return nil }
        let oldest: Int64?
        switch scope {
        case .principalEntries, .principalBytes:
            oldest =
                try database.first(
                    "SELECT min(expires_at) FROM replies WHERE principal = ? AND state <> 0", .blob(key.principal)
                ) { $0.isNull(0) ? nil : $0.integer(0) } ?? nil
        case .clientEntries, .clientBytes:
            oldest =
                try database.first(
                    "SELECT min(expires_at) FROM replies WHERE principal = ? AND client_id = ? AND state <> 0",
                    .blob(key.principal), .blob(key.clientID)
                ) { $0.isNull(0) ? nil : $0.integer(0) } ?? nil
        case .entries, .bytes:
            oldest =
                try database.first("SELECT min(expires_at) FROM replies WHERE state <> 0") {
                    $0.isNull(0) ? nil : $0.integer(0)
                } ?? nil
        }
        let wait = oldest.map { max(1, $0 - now) } ?? 1000
        return DurableRefusal(scope: scope, retryAfter: .milliseconds(wait))
    }

    /// Gives up the key's client's own oldest finished entries, as many as `entries` and `bytes`
    /// more take to fit every budget; false, giving up nothing, when all of them would not make
    /// room.
    private func makeRoom(_ key: DurableRequestKey, entries: Int64, bytes: Int64) throws(SQLiteError) -> Bool {
        let limits = configuration.budgets
        let principal = try usage(1, key.principal, [])
        let client = try usage(2, key.principal, key.clientID)
        let total = try usage(0, [], [])
        // How many entries and bytes must go (0 or less: they fit).
        let count =
            entries > 0
            ? max(
                principal.entries + entries - Int64(limits.dedupeCapacityPerPrincipal),
                client.entries + entries - Int64(limits.dedupeCapacityPerClient),
                total.entries + entries - Int64(limits.dedupeCapacity)) : 0
        let size =
            bytes > 0
            ? max(
                principal.bytes + bytes - Int64(limits.dedupeBytesPerPrincipal),
                client.bytes + bytes - Int64(limits.dedupeBytesPerClient),
                total.bytes + bytes - Int64(limits.dedupeBytes)) : 0
        guard count <= client.entries, size <= client.bytes else { return false }
        var victims: [(requestID: [UInt8], charge: Int64)] = []
        var freed: Int64 = 0
        while victims.count < count || freed < size {
            var page: [(requestID: [UInt8], charge: Int64)] = []
            try database.query(
                "SELECT request_id, charge FROM replies WHERE principal = ? AND client_id = ? AND state IN (1, 2)"
                    + " ORDER BY expires_at LIMIT ? OFFSET ?",
                .blob(key.principal), .blob(key.clientID), .integer(max(64, count)), .integer(Int64(victims.count))
            ) { row in page.append((row.blob(0), row.integer(1))) }
            guard !page.isEmpty else { return false }
            for victim in page where victims.count < count || freed < size {
                victims.append(victim)
                freed += victim.charge
            }
        }
        for victim in victims {
            try database.run(
                "DELETE FROM replies WHERE principal = ? AND client_id = ? AND request_id = ?",
                .blob(key.principal), .blob(key.clientID), .blob(victim.requestID))
        }
        try account(key.principal, key.clientID, entries: -Int64(victims.count), bytes: -freed)
        return true
    }

    private func overBudget(_ key: DurableRequestKey, entries: Int64, bytes: Int64) throws(SQLiteError)
        -> DurableRefusal.Scope?
    {
        guard entries > 0 || bytes > 0 else { return nil }
        let limits = configuration.budgets
        let principal = try usage(1, key.principal, [])
        let client = try usage(2, key.principal, key.clientID)
        let total = try usage(0, [], [])
        func over(_ held: Int64, _ adding: Int64, _ limit: Int) -> Bool { adding > 0 && held + adding > Int64(limit) }
        if over(principal.entries, entries, limits.dedupeCapacityPerPrincipal) { return .principalEntries }
        if over(principal.bytes, bytes, limits.dedupeBytesPerPrincipal) { return .principalBytes }
        if over(client.entries, entries, limits.dedupeCapacityPerClient) { return .clientEntries }
        if over(client.bytes, bytes, limits.dedupeBytesPerClient) { return .clientBytes }
        if over(total.entries, entries, limits.dedupeCapacity) { return .entries }
        if over(total.bytes, bytes, limits.dedupeBytes) { return .bytes }
        return nil
    }

    /// A duration in whole ms, at least 0.
    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
