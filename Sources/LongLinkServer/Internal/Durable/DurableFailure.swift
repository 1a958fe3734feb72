internal import CSQLite

/// The errors the durable store throws, each naming its file: an operator reading the log must
/// know which file to look at.
enum DurableFailure {
    /// A SQLite failure at `path` while `doing` (a phrase: "storing a push") as the
    /// ``LongLinkError`` a caller gets: ``LongLinkError/Code-swift.struct/resourceExhausted`` for a
    /// full disk, ``LongLinkError/Code-swift.struct/unavailable`` for a file it cannot write (a
    /// read-only directory, an I/O error: the operation did not happen, and trying later may work),
    /// `DATA_LOSS` for a file that is not a database any more, `INTERNAL` otherwise.
    static func error(_ failure: SQLiteError, path: String, doing: String) -> LongLinkError {
        switch failure.primary {
        case SQLITE_FULL:
            return LongLinkError(
                code: .resourceExhausted,
                message: "the disk holding \(path) is full while \(doing); nothing was stored",
                underlying: failure)
        case SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_IOERR, SQLITE_BUSY, SQLITE_LOCKED,
            SQLITE_PROTOCOL, SQLITE_NOMEM, SQLITE_INTERRUPT:
            return LongLinkError(
                code: .unavailable,
                message: "\(path) could not be written while \(doing) (\(failure.message)); nothing was stored",
                underlying: failure)
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return corrupt(path, detail: failure.message, underlying: failure)
        default:
            return LongLinkError(
                code: .internalError, message: "\(path): \(doing) failed (\(failure.message))", underlying: failure)
        }
    }

    /// `path` is not a database the store can read: it is never reset silently.
    static func corrupt(_ path: String, detail: String, underlying: (any Error & Sendable)? = nil) -> LongLinkError {
        LongLinkError(
            code: .init(status: .dataLoss),
            message:
                "\(path) is not a readable LongLink store (\(detail)); it was left as it is: restore it from a backup,"
                + " or move it away to start an empty store",
            underlying: underlying)
    }

    /// What every operation throws once the store is closed.
    static func closed(_ path: String) -> LongLinkError {
        LongLinkError(code: .shutdown, message: "the durable store on \(path) is closed")
    }
}
