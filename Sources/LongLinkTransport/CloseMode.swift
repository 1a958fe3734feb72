/// How ``Connection/close(_:error:)`` ends a connection.
public enum CloseMode: Sendable, Hashable {
    /// Stop reading, write what is queued, shut the write side (the peer sees end of stream), and
    /// close once the peer closes too, dropping what it still sends: closing earlier would let its
    /// late bytes reset the connection and cost it our last frames unread. Writing and waiting
    /// are bounded together by ``ConnectionOptions/gracefulCloseTimeout``.
    case graceful
    /// Drop queued writes and close at once (bytes the kernel already took still go out).
    case immediately
    /// Drop queued writes and close with `SO_LINGER` 0: the peer sees a reset (`ECONNRESET`).
    case reset
}
