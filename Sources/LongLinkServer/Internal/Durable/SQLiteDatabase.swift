internal import CSQLite

/// A failed SQLite call: the (extended) result code and SQLite's message. The engine turns it into
/// a ``LongLinkError`` that names the file (``DurableFailure``).
struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// The extended result code (`SQLITE_IOERR_FSYNC`, …); `code & 0xFF` is the primary one.
    var code: Int32
    var message: String

    var primary: Int32 { code & 0xFF }

    var description: String { "SQLite \(code): \(message)" }
}

/// A value bound to a statement's parameter.
enum SQLiteValue {
    case integer(Int64)
    case blob([UInt8])
}

/// One SQLite connection with its prepared statements, cached by their SQL.
///
/// Not thread-safe: the store uses it from its writer thread only (and from the thread that opens
/// it, before the writer starts).
final class SQLiteDatabase {
    let path: String
    private var handle: OpaquePointer?
    private var statements: [String: SQLiteStatement] = [:]

    /// Opens (creating it when missing) the database file at `path`.
    init(path: String) throws(SQLiteError) {
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let result = sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(handle)
            throw SQLiteError(code: result, message: message)
        }
        sqlite3_extended_result_codes(handle, 1)
        self.handle = handle
    }

    deinit {
        close()
    }

    /// Finalizes every statement and closes the connection (SQLite checkpoints the WAL then).
    func close() {
        for statement in statements.values { statement.finalize() }
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// True inside a transaction. SQLite rolls a transaction back by itself after some errors
    /// (a full disk, an I/O error): this tells whether the transaction survived.
    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// Runs `sql` (one or more statements, no parameters) to completion.
    func execute(_ sql: String) throws(SQLiteError) {
        let result = sqlite3_exec(handle, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw failure(result) }
    }

    /// Runs one statement to completion with `values` bound; returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: SQLiteValue...) throws(SQLiteError) -> Int {
        let statement = try prepared(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() {}
        return Int(sqlite3_changes(handle))
    }

    /// Runs one query with `values` bound and calls `row` for each row.
    func query(_ sql: String, _ values: SQLiteValue..., row: (SQLiteStatement) throws(SQLiteError) -> Void)
        throws(SQLiteError)
    {
        let statement = try prepared(sql)
        try statement.bind(values)
        defer { statement.reset() }
        while try statement.step() { try row(statement) }
    }

    /// The first row of a query, read by `row`; nil when it has none.
    func first<Row>(_ sql: String, _ values: SQLiteValue..., row: (SQLiteStatement) -> Row) throws(SQLiteError)
        -> Row?
    {
        let statement = try prepared(sql)
        try statement.bind(values)
        defer { statement.reset() }
        return try statement.step() ? row(statement) : nil
    }

    /// The statement for `sql`, prepared once and kept.
    private func prepared(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        var raw: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &raw, nil)
        guard result == SQLITE_OK, let raw else { throw failure(result) }
        let statement = SQLiteStatement(raw, database: self)
        statements[sql] = statement
        return statement
    }

    /// The error of the last call that returned `result`.
    func failure(_ result: Int32) -> SQLiteError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "the database is closed"
        let code = handle.map { sqlite3_extended_errcode($0) } ?? result
        return SQLiteError(code: code != 0 ? code : result, message: message)
    }
}

/// A prepared statement of a ``SQLiteDatabase``, reset after each use.
final class SQLiteStatement {
    private var handle: OpaquePointer?
    private unowned let database: SQLiteDatabase

    init(_ handle: OpaquePointer, database: SQLiteDatabase) {
        self.handle = handle
        self.database = database
    }

    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .integer(let number):
                result = sqlite3_bind_int64(handle, index, number)
            case .blob(let bytes) where bytes.isEmpty:
                // A zero-length blob, not NULL (an empty array has no base address).
                result = sqlite3_bind_zeroblob(handle, index, 0)
            case .blob(let bytes):
                result = bytes.withUnsafeBytes { buffer in
                    sqlite3_bind_blob(
                        handle, index, buffer.baseAddress, Int32(buffer.count), longlink_sqlite3_transient())
                }
            }
            guard result == SQLITE_OK else { throw database.failure(result) }
        }
    }

    /// Steps once: true when a row is ready, false when done.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let result: throw database.failure(result)
        }
    }

    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    func integer(_ column: Int32) -> Int64 {
        sqlite3_column_int64(handle, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    func blob(_ column: Int32) -> [UInt8] {
        // The pointer first, then its length (SQLite's documented order).
        guard let base = sqlite3_column_blob(handle, column) else { return [] }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: base, count: count))
    }

    func text(_ column: Int32) -> String {
        String(decoding: blob(column), as: UTF8.self)
    }
}
