/// Reliable pushes in the file: per principal, its row in `principals` (epoch, next seq, what it
/// holds) and its unacknowledged pushes in `pushes`.
///
/// A principal left with nothing is forgotten, as ``InMemoryPushStore`` forgets it (principals
/// who come and go do not accumulate), after raising `fresh_seq` above its last seq: when it comes
/// back, its log has a new random epoch and its seqs go on above every seq it was given, so no seq
/// is given twice, in this file or after a restart.
extension DurableWriter {
    /// Stores a push under the principal's next seq; nil when the principal is at its budget.
    func append(principal: [UInt8], topic: String, payload: [UInt8]) throws(SQLiteError) -> StoredPush? {
        let size = topic.utf8.count + payload.count
        let found = try database.first(
            "SELECT epoch, next_seq, held, bytes FROM principals WHERE principal = ?", .blob(principal)
        ) { row in (epoch: row.integer(0), next: row.integer(1), held: row.integer(2), bytes: row.integer(3)) }
        var log = (epoch: Int64.random(in: 1...Int64(UInt32.max)), next: Int64(1), held: Int64(0), bytes: Int64(0))
        if let found {
            log = found
        } else {
            // Below 2^32 as ``InMemoryPushStore``'s: at most 5 bytes on the wire.
            log.next = try freshSeq()
        }
        guard log.held < configuration.budgets.pushCapacityPerPrincipal,
            Int64(size) <= Int64(configuration.budgets.pushBytesPerPrincipal) - log.bytes
        else { return nil }
        try database.run(
            "INSERT INTO pushes (principal, seq, epoch, topic, payload, stored_at) VALUES (?, ?, ?, ?, ?, ?)",
            .blob(principal), .integer(log.next), .integer(log.epoch), .blob(Array(topic.utf8)), .blob(payload),
            .integer(now()))
        if found == nil {
            try database.run(
                "INSERT INTO principals (principal, epoch, next_seq, held, bytes) VALUES (?, ?, ?, 1, ?)",
                .blob(principal), .integer(log.epoch), .integer(log.next + 1), .integer(Int64(size)))
        } else {
            try database.run(
                "UPDATE principals SET next_seq = ?, held = held + 1, bytes = bytes + ? WHERE principal = ?",
                .integer(log.next + 1), .integer(Int64(size)), .blob(principal))
        }
        return StoredPush(seq: UInt64(log.next), topic: topic, payload: payload, epoch: UInt64(log.epoch))
    }

    /// The unacknowledged pushes with `seq > after`, in seq order, at most `limit`.
    func unacknowledged(principal: [UInt8], after seq: UInt64, limit: Int) throws(SQLiteError) -> [StoredPush] {
        var pushes: [StoredPush] = []
        guard limit > 0, seq < UInt64(Int64.max) else { return pushes }
        try database.query(
            "SELECT seq, topic, payload, epoch FROM pushes WHERE principal = ? AND seq > ? ORDER BY seq LIMIT ?",
            .blob(principal), .integer(Int64(seq)), .integer(Int64(limit))
        ) { row in
            pushes.append(
                StoredPush(
                    seq: UInt64(row.integer(0)), topic: row.text(1), payload: row.blob(2),
                    epoch: UInt64(row.integer(3))))
        }
        return pushes
    }

    /// Deletes the given pushes numbered in `epoch` (0: any); unknown seqs are ignored. Returns how
    /// many it deleted.
    @discardableResult
    func acknowledge(principal: [UInt8], seqs: [UInt64], epoch: UInt64) throws(SQLiteError) -> Int {
        var count: Int64 = 0
        var bytes: Int64 = 0
        let epoch = Int64(truncatingIfNeeded: epoch)
        for seq in seqs where seq <= UInt64(Int64.max) {
            let size = try database.first(
                "DELETE FROM pushes WHERE principal = ? AND seq = ? AND (? = 0 OR epoch = ?)"
                    + " RETURNING length(topic) + length(payload)",
                .blob(principal), .integer(Int64(seq)), .integer(epoch), .integer(epoch)
            ) { $0.integer(0) }
            if let size {
                count += 1
                bytes += size
            }
        }
        guard count > 0 else { return 0 }
        let left = try database.first(
            "UPDATE principals SET held = held - ?, bytes = bytes - ? WHERE principal = ? RETURNING held, next_seq",
            .integer(count), .integer(bytes), .blob(principal)
        ) { (held: $0.integer(0), next: $0.integer(1)) }
        if let left, left.held <= 0 {
            try database.run("DELETE FROM principals WHERE principal = ?", .blob(principal))
            try database.run(
                "UPDATE meta SET value = max(value, ?) WHERE name = 'fresh_seq'", .integer(left.next))
        }
        return Int(count)
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    func unacknowledgedCount(principal: [UInt8]) throws(SQLiteError) -> Int {
        Int(
            try database.first("SELECT held FROM principals WHERE principal = ?", .blob(principal)) { $0.integer(0) }
                ?? 0)
    }

    /// Where the log of a principal seen anew starts: above every seq of a principal forgotten.
    private func freshSeq() throws(SQLiteError) -> Int64 {
        try database.first("SELECT value FROM meta WHERE name = 'fresh_seq'") { $0.integer(0) } ?? 1
    }

    /// Gives every principal with pushes stored a new random epoch, its stored pushes too, in one
    /// transaction: after commits were lost (a torn log), seqs the file hands out again may be
    /// ones a client saw, and a new epoch makes the client take them as new. Returns how many.
    func startNewEpochs() throws(SQLiteError) -> Int {
        var principals: [(name: [UInt8], epoch: Int64)] = []
        try database.query("SELECT principal, epoch FROM principals") { row in
            principals.append((row.blob(0), row.integer(1)))
        }
        guard !principals.isEmpty else { return 0 }
        try database.run("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            for principal in principals {
                var epoch = principal.epoch
                while epoch == principal.epoch { epoch = Int64.random(in: 1...Int64(UInt32.max)) }
                try database.run(
                    "UPDATE principals SET epoch = ? WHERE principal = ?", .integer(epoch), .blob(principal.name))
                try database.run(
                    "UPDATE pushes SET epoch = ? WHERE principal = ?", .integer(epoch), .blob(principal.name))
            }
            try database.run("COMMIT")
        } catch {
            if database.isInTransaction { _ = try? database.run("ROLLBACK") }
            throw error
        }
        return principals.count
    }
}
