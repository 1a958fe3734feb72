internal import LongLinkCore

/// Presence: a principal's sessions, from the fleet's shared store or from this server.
extension ServerCore {
    /// `principal`'s sessions across the fleet when the push store shares presence, else here.
    func presence(of principal: String) async throws(LongLinkError) -> Presence {
        if presence != nil, let shared = try await pushes.presence(of: principal) { return shared }
        let sessions = connections(of: principal).map {
            Presence.Session(serverID: configuration.serverID, connectionID: $0.connection.id)
        }
        return Presence(
            principal: principal, count: sessions.count, sessions: Array(sessions.prefix(Presence.listLimit)))
    }
}
