internal import LongLinkCore
internal import LongLinkTransport

/// The durable store's side on its writer thread: the SQLite connection and every operation on it.
///
/// A turn of the writer (``commit(_:)``) runs every write queued since the last turn in one
/// transaction and commits once: one `fsync` for all of them under
/// ``DurableSyncPolicy/everyCommit``. A write that fails undoes itself alone: when one does, the
/// turn is rolled back and run again with a savepoint per write (see ``commit(_:)``). Expired
/// de-dup entries are removed in the same transactions, a bounded number per turn.
///
/// `@unchecked Sendable`: it is handed to the writer thread when the store opens, and used there
/// only, never concurrently.
final class DurableWriter: @unchecked Sendable {
    let database: SQLiteDatabase
    let configuration: DurableStoreConfiguration
    /// Wall-clock time in ms since 1970: expiries outlive the process, so no monotonic clock will do.
    let now: @Sendable () -> Int64
    let statistics: Locked<DurableStoreStatistics>
    /// The `principals` rows the writer has read or changed (see ``DurablePrincipalLogs``).
    var logs = DurablePrincipalLogs()
    /// Held until ``close()``.
    private var lock: DurableDirectoryLock?
    /// The most expired de-dup entries one turn removes.
    static let sweepLimit = 256
    /// Transactions committed, as `meta.commits` holds it, and its copy beside the file (see
    /// ``DurableCommitMark``); set on opening by ``resumeCommits(mark:)``.
    private var commits: Int64 = 0
    private var commitMark: DurableCommitMark?

    var path: String { database.path }

    init(
        database: SQLiteDatabase, lock: DurableDirectoryLock, configuration: DurableStoreConfiguration,
        statistics: Locked<DurableStoreStatistics>, now: @escaping @Sendable () -> Int64
    ) {
        self.database = database
        self.lock = lock
        self.configuration = configuration
        self.statistics = statistics
        self.now = now
    }

    /// Runs `writes` in one transaction and answers each after the commit (or with why not).
    ///
    /// The turn first runs every write straight in the transaction: a savepoint each costs more
    /// than the write. Only when something fails is it rolled back and run again with a savepoint
    /// per write, so that the failing write alone is undone and the others commit.
    func commit(_ writes: [DurableWrite]) {
        var failures = [SQLiteError?](repeating: nil, count: writes.count)
        var whole: SQLiteError?
        if !commitTogether(writes) {
            do throws(SQLiteError) {
                try commitEachUnderSavepoint(writes, failures: &failures)
            } catch {
                whole = error
                logs.forget()
                if database.isInTransaction { _ = try? database.run("ROLLBACK") }
            }
        }
        let committed = whole == nil
        statistics.withLock { statistics in
            if committed {
                statistics.transactions += 1
                statistics.writes += writes.count
                statistics.largestTransaction = max(statistics.largestTransaction, writes.count)
            } else {
                statistics.failedTransactions += 1
            }
        }
        for (index, write) in writes.enumerated() {
            write.finish(whole ?? failures[index])
        }
    }

    /// The turn with no savepoint; false when anything failed (then nothing of it is left).
    private func commitTogether(_ writes: [DurableWrite]) -> Bool {
        do throws(SQLiteError) {
            try database.run("BEGIN IMMEDIATE")
            for write in writes { try write.run(self) }
            _ = try sweepExpired(limit: Self.sweepLimit)
            try flushLogs()
            try endTransaction()
            return true
        } catch {
            logs.forget()
            if database.isInTransaction { _ = try? database.run("ROLLBACK") }
            return false
        }
    }

    /// The turn with a savepoint per write (and one for the sweep): a write that fails is undone
    /// alone and its failure kept in `failures`. Throws when the transaction as a whole fails.
    private func commitEachUnderSavepoint(_ writes: [DurableWrite], failures: inout [SQLiteError?])
        throws(SQLiteError)
    {
        try database.run("BEGIN IMMEDIATE")
        for (index, write) in writes.enumerated() {
            try database.run("SAVEPOINT write")
            do throws(SQLiteError) {
                try write.run(self)
                try flushLogs()
                try database.run("RELEASE write")
            } catch {
                // SQLite rolled the whole transaction back (a full disk, an I/O error): every
                // write of the turn fails alike. Else only this one is undone.
                logs.forget()
                guard database.isInTransaction else { throw error }
                try database.run("ROLLBACK TO write")
                try database.run("RELEASE write")
                failures[index] = error
            }
        }
        try sweepUnderSavepoint()
        try endTransaction()
    }

    /// Counts the commit in the file and commits; then counts it beside the file.
    private func endTransaction() throws(SQLiteError) {
        try database.run("INSERT OR REPLACE INTO meta (name, value) VALUES ('commits', ?)", .integer(commits + 1))
        try database.run("COMMIT")
        commits += 1
        commitMark?.write(commits)
    }

    /// Removes up to ``sweepLimit`` expired entries under a savepoint of their own: a failure
    /// undoes the sweep alone, and the turn's writes commit without it.
    private func sweepUnderSavepoint() throws(SQLiteError) {
        try database.run("SAVEPOINT sweep")
        do throws(SQLiteError) {
            _ = try sweepExpired(limit: Self.sweepLimit)
            try database.run("RELEASE sweep")
        } catch {
            guard database.isInTransaction else { throw error }
            try database.run("ROLLBACK TO sweep")
            try database.run("RELEASE sweep")
        }
    }

    /// Syncs the log and copies it into the database file (the ``DurableSyncPolicy/interval(_:)``
    /// policy's sync point). A failure is logged; the next one tries again.
    func checkpoint() {
        do throws(SQLiteError) {
            try database.execute("PRAGMA wal_checkpoint(PASSIVE)")
            statistics.withLock { $0.checkpoints += 1 }
        } catch {
            configuration.logger?("LongLink durable store: checkpoint of \(path) failed: \(error.message)")
        }
    }

    /// Closes the database (SQLite checkpoints the log into the file) and releases the directory.
    func close() {
        database.close()
        lock = nil
    }

    // MARK: Opening

    /// On opening: the commits the file holds, against those `mark` counted. Returns how many
    /// commits the file lacks (its log was cut), 0 when none; then the mark counts the file's.
    func resumeCommits(mark: DurableCommitMark?) throws(SQLiteError) -> Int64 {
        commits = try database.first("SELECT value FROM meta WHERE name = 'commits'") { $0.integer(0) } ?? 0
        commitMark = mark
        let marked = mark?.read() ?? 0
        mark?.write(commits)
        return max(0, marked - commits)
    }

    /// On opening: every claim still running was taken by a process that stopped before it
    /// answered (only one process holds the file). Each becomes "outcome unknown" for at least its
    /// window from now: a copy is answered `UNKNOWN`, never run a second time. Returns how many.
    func markRunningClaimsUnknown() throws(SQLiteError) -> Int {
        let changed = try database.run(
            "UPDATE replies SET state = 3, reply = NULL, expires_at = max(expires_at, ? + window) WHERE state = 0",
            .integer(now()))
        statistics.withLock { $0.claimsUnknownOnOpen = changed }
        return changed
    }
}
