#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The write-ahead log (`longlink.sqlite-wal`) as the last process left it, read before SQLite
/// opens the file: SQLite recovers a log whose end is torn by dropping everything after its last
/// whole commit, silently. Commits dropped that way may have numbered pushes a client has seen,
/// so the store must know, to number on in new epochs and to say so.
///
/// SQLite appends whole frames (a 24-byte header and one page), so a log that is not a 32-byte
/// header and whole frames was cut: a torn write or a truncation. A log cut exactly at a frame's
/// end is indistinguishable from a commit that never finished, and is not detected.
enum DurableLogTail {
    /// The bytes at the end of the log at `path` that are not a whole frame; 0 when the log is
    /// whole, absent, or not one SQLite would read (SQLite ignores it then, and so does this).
    static func tornBytes(_ path: String) -> Int {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return 0 }
        let size = Int(status.st_size)
        guard size >= 32 else { return size }
        var header = [UInt8](repeating: 0, count: 32)
        guard header.withUnsafeMutableBytes({ pread(descriptor, $0.baseAddress, 32, 0) }) == 32 else { return 0 }
        func bigEndian(_ at: Int) -> Int { header[at..<(at + 4)].reduce(0) { $0 << 8 | Int($1) } }
        // The magic numbers of a log with big- and little-endian checksums.
        guard bigEndian(0) == 0x377F_0682 || bigEndian(0) == 0x377F_0683 else { return 0 }
        let pageSize = bigEndian(8) == 1 ? 65_536 : bigEndian(8)
        guard pageSize >= 512, pageSize <= 65_536, pageSize & (pageSize - 1) == 0 else { return 0 }
        return (size - 32) % (pageSize + 24)
    }
}
