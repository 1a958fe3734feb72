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
        let size = Int64(topic.utf8.count + payload.count)
        var log: DurablePrincipalLog
        if let found = try principalLog(principal) {
            log = found
        } else {
            // Below 2^32 as ``InMemoryPushStore``'s: at most 5 bytes on the wire.
            log = DurablePrincipalLog(
                epoch: Int64.random(in: 1...Int64(UInt32.max)), next: try freshSeq(), held: 0, bytes: 0)
        }
        guard log.held < configuration.budgets.pushCapacityPerPrincipal,
            size <= Int64(configuration.budgets.pushBytesPerPrincipal) - log.bytes
        else { return nil }
        try database.run(
            "INSERT INTO pushes (principal, seq, epoch, topic, payload, stored_at) VALUES (?, ?, ?, ?, ?, ?)",
            .blob(principal), .integer(log.next), .integer(log.epoch), .blob(Array(topic.utf8)), .blob(payload),
            .integer(now()))
        let stored = StoredPush(seq: UInt64(log.next), topic: topic, payload: payload, epoch: UInt64(log.epoch))
        log.next += 1
        log.held += 1
        log.bytes += size
        logs.update(principal, log)
        return stored
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
        guard count > 0, var log = try principalLog(principal) else { return Int(count) }
        log.held -= count
        log.bytes -= bytes
        logs.update(principal, log)
        return Int(count)
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    func unacknowledgedCount(principal: [UInt8]) throws(SQLiteError) -> Int {
        Int(try principalLog(principal)?.held ?? 0)
    }

    /// The principal's row: the writer's copy, else read from the file (and kept).
    private func principalLog(_ principal: [UInt8]) throws(SQLiteError) -> DurablePrincipalLog? {
        if let log = logs[principal] { return log }
        let found = try database.first(
            "SELECT epoch, next_seq, held, bytes FROM principals WHERE principal = ?", .blob(principal)
        ) { row in DurablePrincipalLog(epoch: row.integer(0), next: row.integer(1), held: row.integer(2), bytes: row.integer(3)) }
        if let found { logs.remember(principal, found) }
        return found
    }

    /// Where the log of a principal seen anew starts: above every seq of a principal forgotten.
    private func freshSeq() throws(SQLiteError) -> Int64 {
        if let fresh = logs.freshSeq { return fresh }
        let fresh = try database.first("SELECT value FROM meta WHERE name = 'fresh_seq'") { $0.integer(0) } ?? 1
        logs.freshSeq = fresh
        return fresh
    }

    /// Writes the rows the turn changed (once each, however many of its writes changed them): a
    /// principal left with nothing is deleted, after raising `fresh_seq` above its last seq.
    func flushLogs() throws(SQLiteError) {
        for (principal, log) in logs.takeDirty() {
            if log.held <= 0 {
                try database.run("DELETE FROM principals WHERE principal = ?", .blob(principal))
                if log.next > (try freshSeq()) {
                    logs.freshSeq = log.next
                    try database.run("UPDATE meta SET value = ? WHERE name = 'fresh_seq'", .integer(log.next))
                }
            } else {
                try database.run(
                    "INSERT OR REPLACE INTO principals (principal, epoch, next_seq, held, bytes) VALUES (?, ?, ?, ?, ?)",
                    .blob(principal), .integer(log.epoch), .integer(log.next), .integer(log.held), .integer(log.bytes))
            }
        }
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
        logs.forget()
        return principals.count
    }
}
