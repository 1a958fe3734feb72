import LongLinkCore

/// Receives what happens on a ``Connection``: install one with ``Connection/start(handler:)``.
///
/// Callbacks arrive on the connection's event loop thread, one at a time, and never re-entrantly for the same
/// connection: closing the connection inside `didRead` delivers `didCloseWith` after `didRead` returns.
/// The connection holds its handler strongly until `didCloseWith`, then releases it.
public protocol ConnectionHandler: AnyObject {
    /// Bytes arrived. `bytes` is valid only during the call (copy what you keep).
    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer)

    /// ``Connection/isWritable`` changed. Changes are reported after a flush, so a brief dip can go unreported.
    /// The default does nothing.
    func connectionWritabilityChanged(_ connection: Connection)

    /// The connection closed, exactly once: `nil` after the peer ended the stream or a local
    /// ``CloseMode/graceful`` close without an error; otherwise the reason (a reset, an I/O error, the error
    /// passed to ``Connection/close(_:error:)``, or shutdown of the loop).
    func connection(_ connection: Connection, didCloseWith error: LongLinkError?)
}

extension ConnectionHandler {
    /// Does nothing.
    public func connectionWritabilityChanged(_ connection: Connection) {}
}
