/// A principal's row in `principals`: its epoch, its next seq and what it holds.
struct DurablePrincipalLog: Sendable, Hashable {
    var epoch: Int64
    var next: Int64
    var held: Int64
    var bytes: Int64
}

/// The writer's copy of the `principals` rows it has read or changed, and of `meta.fresh_seq`:
/// a push reads no row, and a principal's row is written once per turn, however many of its
/// pushes and acknowledgements the turn holds (``DurableWriter/flushLogs()``).
///
/// The copy is only ever ahead of the file inside an open transaction; whenever SQLite undoes
/// anything (a rollback, to a savepoint or whole), the writer forgets the copy and reads the file
/// again. At most ``capacity`` rows are kept: past it, the copy is emptied after a flush.
struct DurablePrincipalLogs {
    /// The most rows kept between turns (a few MB).
    static let capacity = 65_536

    private(set) var rows: [[UInt8]: DurablePrincipalLog] = [:]
    /// Principals whose row changed since the last flush.
    private(set) var dirty: Set<[UInt8]> = []
    /// `meta.fresh_seq`, once read.
    var freshSeq: Int64?

    subscript(principal: [UInt8]) -> DurablePrincipalLog? { rows[principal] }

    /// Keeps a row as read from the file.
    mutating func remember(_ principal: [UInt8], _ log: DurablePrincipalLog) {
        rows[principal] = log
    }

    /// Changes a row; written at the next flush.
    mutating func update(_ principal: [UInt8], _ log: DurablePrincipalLog) {
        rows[principal] = log
        dirty.insert(principal)
    }

    /// The changed rows, and marks them written; rows left with nothing are dropped from the copy
    /// (their rows are deleted).
    mutating func takeDirty() -> [(principal: [UInt8], log: DurablePrincipalLog)] {
        defer { dirty.removeAll(keepingCapacity: true) }
        let changed = dirty.map { (principal: $0, log: rows[$0]!) }
        for (principal, log) in changed where log.held <= 0 { rows[principal] = nil }
        if rows.count > Self.capacity { rows.removeAll() }
        return changed
    }

    /// Forgets everything: the file is read again.
    mutating func forget() {
        rows.removeAll()
        dirty.removeAll()
        freshSeq = nil
    }
}
