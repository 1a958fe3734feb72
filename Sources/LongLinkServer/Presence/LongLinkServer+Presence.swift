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
    /// fleet this is this server's share: each server answers for its own connections; ask
    /// ``presence(of:)`` for the fleet's.
    public func sessions(of principal: String) -> Int {
        core.sessionCount(of: principal)
    }

    /// Whether `principal` has a session on this server now.
    public func isConnected(_ principal: String) -> Bool {
        core.holds(principal)
    }

    /// Whether `principal` is connected, and on how many sessions, across the fleet: every server
    /// sharing the push store when it shares presence (``PushStore/sharesPresence``: a fleet on
    /// Redis or Redis Cluster), else this server.
    ///
    /// In a fleet a session shows once its server has written it, a round trip after its login,
    /// and goes a round trip after it ends; a server that crashed (and so never wrote its
    /// sessions' ends) stops renewing them, and they are gone within
    /// ``ServerConfiguration/presenceLease``. Throws ``LongLinkError/Code-swift.struct/unavailable``
    /// when the shared store cannot be reached.
    ///
    /// ```swift
    /// if try await server.presence(of: "alice").isConnected { … }
    /// ```
    public func presence(of principal: String) async throws(LongLinkError) -> Presence {
        try await core.presence(of: principal)
    }
}

extension RequestContext {
    /// How many sessions `principal` has on the server running this handler (see
    /// ``LongLinkServer/sessions(of:)``).
    public func sessions(of principal: String) -> Int {
        session.core.sessionCount(of: principal)
    }

    /// Whether `principal` is connected, and on how many sessions, across the fleet (see
    /// ``LongLinkServer/presence(of:)``).
    public func presence(of principal: String) async throws(LongLinkError) -> Presence {
        try await session.core.presence(of: principal)
    }
}
