extension LongLinkServer {
    /// The sessions beginning and ending on this server from now on, as they happen, until the
    /// server stops. Each call makes a stream of its own; one that falls more than
    /// ``ServerConfiguration/sessionEventBuffer`` events behind loses the oldest (counted in
    /// ``ServerStatistics/sessionEventsDropped``).
    ///
    /// ```swift
    /// for await event in server.sessionEvents() {
    ///     if case .ended(let reason) = event.kind { print("\(event.principal) left: \(reason)") }
    /// }
    /// ```
    public func sessionEvents() -> AsyncStream<SessionEvent> {
        core.sessionEvents.stream()
    }

    /// How many sessions `principal` has on this server now (0 when it is not connected). On a
    /// fleet this is this server's share: each server answers for its own connections.
    public func sessions(of principal: String) -> Int {
        core.sessionCount(of: principal)
    }

    /// Whether `principal` has a session on this server now.
    public func isConnected(_ principal: String) -> Bool {
        core.holds(principal)
    }
}

extension RequestContext {
    /// How many sessions `principal` has on the server running this handler (see
    /// ``LongLinkServer/sessions(of:)``).
    public func sessions(of principal: String) -> Int {
        session.core.sessionCount(of: principal)
    }
}
