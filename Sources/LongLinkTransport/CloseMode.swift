/// How ``Connection/close(_:error:)`` ends a connection.
public enum CloseMode: Sendable, Hashable {
    /// Stop reading, write what is queued (bounded by ``ConnectionOptions/gracefulCloseTimeout``), then close
    /// normally (the peer sees end of stream).
    case graceful
    /// Drop queued writes and close at once (bytes the kernel already took still go out).
    case immediately
    /// Drop queued writes and close with `SO_LINGER` 0: the peer sees a reset (`ECONNRESET`).
    case reset
}
