#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How many transactions the store has committed, kept twice: in the database (`meta.commits`,
/// in each commit's own transaction) and in a small file beside it (`longlink.commits`, written
/// after each commit). SQLite opens a write-ahead log whose tail was cut (a torn write, a damaged
/// disk) by dropping the commits after the cut, silently; then the file counts more commits than
/// the database holds, and the store knows that seqs it handed out may be handed out again.
///
/// The file is written without `fsync`: a killed process leaves it in the kernel's cache, which
/// outlives the process. After a machine crash it may count fewer commits than the database (the
/// check then sees nothing), never more than were made.
final class DurableCommitMark: @unchecked Sendable {
    /// The file's name in the data directory.
    static let fileName = "longlink.commits"

    let path: String
    private let descriptor: Int32

    /// Opens (creating) the mark in `directory`; nil when it cannot be opened: the store works
    /// without it, it only cannot tell a cut log.
    init?(directory: String) {
        path = DurableDirectoryLock.join(directory, Self.fileName)
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return nil }
    }

    deinit {
        close(descriptor)
    }

    /// The count written last; 0 for a new (or unreadable) file.
    func read() -> Int64 {
        var bytes = [UInt8](repeating: 0, count: 8)
        guard bytes.withUnsafeMutableBytes({ pread(descriptor, $0.baseAddress, 8, 0) }) == 8 else { return 0 }
        return Int64(bitPattern: bytes.reduce(0) { $0 << 8 | UInt64($1) })
    }

    /// Writes `count` (8 bytes, big-endian, in one `pwrite`); a failure is ignored (see `init`).
    func write(_ count: Int64) {
        let value = UInt64(bitPattern: count)
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
        _ = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, 8, 0) }
    }
}
