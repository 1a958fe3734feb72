import LongLinkCore

/// Something an event loop owns: a connection, a listener, a connect in progress. The loop delivers its
/// readiness events and closes it when the loop shuts down. Loop thread only.
protocol LoopResource: AnyObject {
    /// Readiness of the descriptor the resource registered under its id.
    func handleEvents(_ events: IOEvents)
    /// The loop is shutting down: close, fail whatever waits with `error`, and call
    /// ``EventLoop/release(_:)``.
    func closeForShutdown(_ error: LongLinkError)
}
