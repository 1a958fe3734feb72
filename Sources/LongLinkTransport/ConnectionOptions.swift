import LongLinkCore

/// Settings of each TCP connection: a client's connections to its servers, or every connection a
/// server accepts.
public struct ConnectionOptions: Sendable {
    /// The budget of one connection attempt: resolving the name and trying every address.
    public var connectTimeout: Duration = .seconds(10)
    /// Sets `TCP_NODELAY` (no Nagle delay) on TCP sockets.
    public var noDelay: Bool = true
    /// When the bytes queued for writing on a connection reach this, writers wait until the socket
    /// has drained the queue to ``writeBufferLowWatermark``.
    public var writeBufferHighWatermark: Int = 1 << 20
    /// When the queued bytes drop back to this, writers go on.
    public var writeBufferLowWatermark: Int = 256 << 10
    /// The most bytes one read takes from the socket (and the most one `didRead` callback delivers).
    package var readChunkSize: Int = 16 << 10
    /// Writes coalesce until the end of the loop's iteration, except that once this many bytes are
    /// queued the connection writes them at once. Without it, a long burst (1,000 replies decoded
    /// from one read) reaches the peer only when all of it is done, and the two sides take turns
    /// instead of working at the same time.
    package var eagerFlushBytes: Int = 8 << 10
    /// How long a graceful close (a drain, a shutdown) may spend writing what is queued and then
    /// waiting for the peer's end of stream before it closes anyway.
    public var gracefulCloseTimeout: Duration = .seconds(2)

    /// The defaults.
    public init() {}

    /// Throws ``LongLinkCore/LongLinkError/Code-swift.struct/invalidConfiguration`` unless the values make sense
    /// (positive sizes, low watermark not above the high one, non-negative timeouts).
    package func validate() throws(LongLinkError) {
        func fail(_ message: String) -> LongLinkError {
            LongLinkError(code: .invalidConfiguration, message: message)
        }
        guard readChunkSize > 0 else {
            throw fail("readChunkSize must be positive, not \(readChunkSize)")
        }
        guard eagerFlushBytes > 0 else {
            throw fail("eagerFlushBytes must be positive, not \(eagerFlushBytes)")
        }
        guard writeBufferHighWatermark > 0, writeBufferLowWatermark >= 0,
            writeBufferLowWatermark <= writeBufferHighWatermark
        else {
            throw fail(
                "write buffer watermarks must satisfy 0 <= low (\(writeBufferLowWatermark)) <= high "
                    + "(\(writeBufferHighWatermark)), high > 0")
        }
        guard connectTimeout >= .zero, gracefulCloseTimeout >= .zero else {
            throw fail("timeouts must not be negative")
        }
    }
}
