internal import LongLinkCore

/// Presence: a principal's sessions, from the fleet's shared store or from this server.
extension ServerCore {
    /// `principal`'s sessions across the fleet when the push store shares presence, else here.
    ///
    /// In the fleet's answer this server's own sessions are replaced by its registry's, which is
    /// current, while its writes to the store trail by a round trip: a handler that has just bound
    /// the connection counts it, and a session that has just ended here is not counted. Only when
    /// the store listed every session (at most ``Presence/listLimit``): past that, its answer
    /// stands as it is.
    func presence(of principal: String) async throws(LongLinkError) -> Presence {
        let own = connections(of: principal).map {
            Presence.Session(serverID: configuration.serverID, connectionID: $0.connection.id)
        }
        guard presence != nil, var shared = try await pushes.presence(of: principal) else {
            return Presence(principal: principal, count: own.count, sessions: Array(own.prefix(Presence.listLimit)))
        }
        guard shared.count == shared.sessions.count else { return shared }
        let sessions = shared.sessions.filter { $0.serverID != configuration.serverID } + own
        shared.count = sessions.count
        shared.sessions = Array(sessions.prefix(Presence.listLimit))
        return shared
    }
}
