/// What tests reach the engine through: SQL run on the writer thread outside any transaction (to
/// make the file read-only or the disk full through SQLite's own settings, `PRAGMA query_only`
/// and `max_page_count`, where the machine's permissions cannot: tests run as root), and the
/// writer itself, held so that writes queue behind it.
extension DurableEngine {
    /// Runs `sql` (no parameters) outside any transaction.
    func execute(_ sql: String) async throws(LongLinkError) {
        try await read("running \(sql)") { writer throws(SQLiteError) in try writer.database.execute(sql) }
    }

    /// The first column of the first row of `sql`, as an integer.
    func integer(_ sql: String) async throws(LongLinkError) -> Int64? {
        try await read("running \(sql)") { writer throws(SQLiteError) in
            try writer.database.first(sql) { $0.integer(0) }
        }
    }

    /// Runs `body` on the writer thread, as a read of its turn: the writer does nothing else
    /// meanwhile, and whatever is queued then waits for its next turn.
    func onWriter(_ body: @escaping @Sendable () -> Void) async throws(LongLinkError) {
        try await read("a test's hold") { _ in body() }
    }

    /// How many operations wait for the writer.
    var queuedOperations: Int { queue.count }
}
