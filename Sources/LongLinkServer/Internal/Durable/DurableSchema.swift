/// The durable store's tables, and the checks a file passes before the store uses it.
///
/// `meta` holds the schema version, the store's id and `fresh_seq` (above every seq of a principal
/// the store forgot, see ``DurableWriter``). `principals` holds each principal with pushes stored:
/// its epoch, its next seq and what it holds. `pushes` the unacknowledged pushes. `replies` the
/// de-dup window's entries: a running claim (0), a reply (1), a reply not kept (2, over the
/// budgets) or an outcome unknown (3, its runner stopped), each with the bytes charged for it and
/// its expiry in wall-clock ms (it outlives the process). `usage` sums the window's entries and
/// bytes in all (level 0), per principal (1) and per client (2), in the same transactions as the
/// entries, so the two never drift. Names are compared as bytes: two spellings of one name in
/// Unicode are two principals, as everywhere in the server.
enum DurableSchema {
    /// The schema this build writes; it opens files of this version and older.
    static let version: Int64 = 1
    /// SQLite's `application_id` of a LongLink store ("LLNK"): another application's database is
    /// refused rather than written into.
    static let applicationID: Int64 = 0x4C4C_4E4B
    /// A new file's page size in bytes (a file keeps the size it was made with).
    static let pageSize = 1024
    /// The log's bytes between SQLite's own checkpoints (it counts them in pages of the file's size).
    static let walBytes = 64 << 20
    /// The database file's name in the data directory.
    static let fileName = "longlink.sqlite"

    /// Each client's finished entries (replies and "not kept" marks) oldest first: those it gives
    /// up at a budget. Created on opening a file written before it too (the schema is the same).
    static let clientAgeIndex =
        "CREATE INDEX IF NOT EXISTS replies_client_age ON replies (principal, client_id, expires_at) WHERE state IN (1, 2)"

    static let tables = """
        CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE principals (
            principal BLOB PRIMARY KEY NOT NULL, epoch INTEGER NOT NULL, next_seq INTEGER NOT NULL,
            held INTEGER NOT NULL, bytes INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE pushes (
            principal BLOB NOT NULL, seq INTEGER NOT NULL, epoch INTEGER NOT NULL, topic BLOB NOT NULL,
            payload BLOB NOT NULL, stored_at INTEGER NOT NULL, PRIMARY KEY (principal, seq));
        CREATE TABLE replies (
            principal BLOB NOT NULL, client_id BLOB NOT NULL, request_id BLOB NOT NULL, state INTEGER NOT NULL,
            reply BLOB, charge INTEGER NOT NULL, expires_at INTEGER NOT NULL, window INTEGER NOT NULL,
            PRIMARY KEY (principal, client_id, request_id));
        CREATE INDEX replies_expiry ON replies (expires_at) WHERE state <> 0;
        \(clientAgeIndex);
        CREATE TABLE usage (
            level INTEGER NOT NULL, principal BLOB NOT NULL, client_id BLOB NOT NULL, entries INTEGER NOT NULL,
            bytes INTEGER NOT NULL, PRIMARY KEY (level, principal, client_id)) WITHOUT ROWID;
        """

    /// Makes `database` ready: WAL mode and `synchronous` per `policy`, the tables created in a
    /// new file, or an existing file checked (ours, a schema this build reads, and, with `verify`,
    /// `PRAGMA quick_check`, then ``clientAgeIndex`` added if it was written before it). Returns
    /// the store's id and whether the file was new. Throws an error naming the file for anything it
    /// cannot use; it changes nothing in such a file.
    static func prepare(
        _ database: SQLiteDatabase, policy: DurableSyncPolicy, verify: Bool
    ) throws(LongLinkError) -> (storeID: Int64, created: Bool) {
        let path = database.path
        do {
            // The first read: a file that is not a database fails here (SQLITE_NOTADB).
            let application = try database.first("PRAGMA application_id") { $0.integer(0) } ?? 0
            let objects = try database.first("SELECT count(*) FROM sqlite_master") { $0.integer(0) } ?? 0
            if objects > 0 || application != 0 {
                guard application == applicationID else {
                    throw LongLinkError(
                        code: .failedPrecondition,
                        message:
                            "\(path) is an SQLite database of another application, not a LongLink store; it was left"
                            + " as it is")
                }
            }
            if objects == 0 {
                // Before the first table: a new file's pages are 1 KB, not 4. A turn's pushes for
                // many principals dirty a page of the pushes' key each, and the commit writes
                // whole pages to the log: a quarter of the bytes to write and sync.
                try database.execute("PRAGMA page_size = \(pageSize)")
                try configure(database, policy: policy)
                return (try create(database), true)
            }
            let version = try database.first("SELECT value FROM meta WHERE name = 'schema_version'") { $0.integer(0) }
            let storeID = try database.first("SELECT value FROM meta WHERE name = 'store_id'") { $0.integer(0) }
            guard let version, let storeID else {
                throw DurableFailure.corrupt(path, detail: "its meta table has no schema version or store id")
            }
            guard version <= Self.version else {
                throw LongLinkError(
                    code: .failedPrecondition,
                    message:
                        "\(path) was written by a newer LongLink (schema \(version)); this build reads schema"
                        + " \(Self.version) and older. It was left as it is")
            }
            if verify {
                var problems: [String] = []
                try database.query("PRAGMA quick_check(5)") { row in problems.append(row.text(0)) }
                guard problems == ["ok"] else {
                    throw DurableFailure.corrupt(path, detail: "quick_check: " + problems.joined(separator: "; "))
                }
            }
            try configure(database, policy: policy)
            try database.execute(clientAgeIndex)
            return (storeID, false)
        } catch let failure as SQLiteError {
            throw DurableFailure.error(failure, path: path, doing: "opening the store")
        } catch let error as LongLinkError {
            throw error
        } catch {
            throw LongLinkError(code: .internalError, message: "\(path): \(error)")
        }
    }

    /// WAL mode and the policy's `synchronous`, set only once the file passed the checks (the
    /// journal mode is written into the file).
    private static func configure(_ database: SQLiteDatabase, policy: DurableSyncPolicy) throws(LongLinkError) {
        let path = database.path
        do {
            let mode = try database.first("PRAGMA journal_mode = WAL") { $0.text(0) }
            guard mode == "wal" else {
                throw LongLinkError(
                    code: .unavailable, message: "\(path) could not be put in WAL mode (it is in \(mode ?? "no") mode)")
            }
            try database.execute("PRAGMA synchronous = \(policy.synchronousPragma)")
            // SQLite checkpoints (and so syncs) at most every `walBytes` of log, not every 1,000
            // pages: a turn of pushes for many principals writes tens of pages, and at the default
            // the checkpoints' syncs took most of the writer's time under `.interval`.
            let pageSize = try database.first("PRAGMA page_size") { $0.integer(0) } ?? 4096
            try database.execute("PRAGMA wal_autocheckpoint = \(Int64(walBytes) / max(pageSize, 512))")
            // The WAL is truncated back to this after a checkpoint rather than left at its peak.
            try database.execute("PRAGMA journal_size_limit = \(walBytes)")
        } catch let failure as SQLiteError {
            throw DurableFailure.error(failure, path: path, doing: "opening the store")
        } catch let error as LongLinkError {
            throw error
        } catch {
            throw LongLinkError(code: .internalError, message: "\(path): \(error)")
        }
    }

    /// Creates the tables of a new file with a fresh store id, in one transaction.
    private static func create(_ database: SQLiteDatabase) throws(SQLiteError) -> Int64 {
        let storeID = Int64.random(in: 1...Int64.max)
        try database.execute("BEGIN IMMEDIATE")
        do throws(SQLiteError) {
            try database.execute(tables)
            try database.execute("PRAGMA application_id = \(applicationID)")
            try database.run(
                "INSERT INTO meta (name, value) VALUES ('schema_version', ?), ('store_id', ?), ('fresh_seq', 1)",
                .integer(version), .integer(storeID))
            try database.execute("COMMIT")
        } catch {
            if database.isInTransaction { try? database.execute("ROLLBACK") }
            throw error
        }
        return storeID
    }
}
