/// Counters of one connection, for tests and debugging. Loop thread only; plain increments on the hot path.
struct ConnectionStatistics: Sendable {
    /// `read` system calls.
    var readCalls = 0
    /// Bytes read.
    var bytesRead = 0
    /// Vectored write system calls (`sendmsg`, `writev` on Darwin).
    var writeCalls = 0
    /// Bytes the kernel took.
    var bytesWritten = 0
}
