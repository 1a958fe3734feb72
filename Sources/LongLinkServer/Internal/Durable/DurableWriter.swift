internal import LongLinkTransport

/// The durable store's side on its writer thread: the SQLite connection and every operation on it.
///
/// A turn of the writer (``commit(_:)``) runs every write queued since the last turn in one
/// transaction, each write under a savepoint of its own (a write that fails undoes itself alone),
/// then commits once: one `fsync` for all of them under ``DurableSyncPolicy/everyCommit``. Expired
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
    func commit(_ writes: [DurableWrite]) {
        var failures = [SQLiteError?](repeating: nil, count: writes.count)
        var whole: SQLiteError?
        do throws(SQLiteError) {
            try database.run("BEGIN IMMEDIATE")
            for (index, write) in writes.enumerated() {
                try database.run("SAVEPOINT write")
                do throws(SQLiteError) {
                    try write.run(self)
                    try database.run("RELEASE write")
                } catch {
                    // SQLite rolled the whole transaction back (a full disk, an I/O error): every
                    // write of the turn fails alike. Else only this one is undone.
                    guard database.isInTransaction else { throw error }
                    try database.run("ROLLBACK TO write")
                    try database.run("RELEASE write")
                    failures[index] = error
                }
            }
            try sweepUnderSavepoint()
            try database.run("INSERT OR REPLACE INTO meta (name, value) VALUES ('commits', ?)", .integer(commits + 1))
            try database.run("COMMIT")
            commits += 1
            commitMark?.write(commits)
        } catch {
            whole = error
            if database.isInTransaction { _ = try? database.run("ROLLBACK") }
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
