import LongLink

/// The soak's sessions: its credentials with a lifetime, and the app's part after a kick for good
/// (log in again through the provider, and take the new session's pushes).
extension SoakRunner {
    /// Pushes, each with the session it came in (a kick for good starts the next), so that a push
    /// delivered again after a kick (its acknowledgement lost with the ended session) is told
    /// apart from a duplicate within a session.
    struct Delivery: Sendable {
        var seq: UInt64
        var session: Int
    }

    /// Sets up the client's login (through the provider when there are credentials) and refresh.
    static func configureSessions(
        _ configuration: inout ClientConfiguration, credentials: SoakCredentials?, sendsToken: Bool
    ) {
        guard let credentials else {
            configuration.login = { session in
                _ = try await session.request("login", payload: Array(SoakServers.principal.utf8))
            }
            return
        }
        var refresh = CredentialRefresh(method: SoakCredentials.refreshMethod) { try credentials.credential() }
        refresh.lead = credentials.lifetime / 2
        refresh.timeout = .seconds(1)
        refresh.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(500))
        configuration.credentials = refresh
        configuration.waitsForLoginAfterSessionEnd = true
        configuration.login = loginStep(sendsToken: sendsToken)
    }

    /// The login: a new credential from the provider every time; a server that takes no token (a
    /// `serve --data-dir` child) is sent the principal alone.
    static func loginStep(sendsToken: Bool) -> @Sendable (LoginSession) async throws -> Void {
        { session in
            let credential = try await session.credential()
            let payload = sendsToken ? "\(SoakServers.principal) \(credential.token)" : SoakServers.principal
            _ = try await session.request("login", payload: Array(payload.utf8))
        }
    }

    /// The app after a kick for good: when the session has ended and the client waits for a login,
    /// logs in again (through the provider) and hands the new session's push stream to the
    /// consumer. Returns how many times it logged in again, when cancelled.
    static func keepLoggingIn(
        _ client: LongLinkClient, sendsToken: Bool, streams: AsyncStream<AsyncStream<Push>>.Continuation
    ) async -> Int {
        var relogins = 0
        for await state in client.connectionStates
        where state.phase == .waitingToReconnect && state.reason.hasPrefix("session ended") {
            do {
                try await client.login(loginStep(sendsToken: sendsToken))
            } catch {
                // Another login is under way, or the client is shutting down: the next state says.
                continue
            }
            relogins += 1
            streams.yield(client.pushes(topic: SoakServers.topic))
        }
        return relogins
    }

    /// The push counts of `deliveries`: distinct seqs, duplicates and reorderings within a
    /// session, and pushes delivered again in a later session.
    static func pushCounts(_ deliveries: [Delivery]) -> (
        distinct: Set<UInt64>, duplicated: Int, outOfOrder: Int, redeliveredAfterKick: Int
    ) {
        var duplicated = 0
        var outOfOrder = 0
        var bySession: [Int: [UInt64]] = [:]
        for delivery in deliveries { bySession[delivery.session, default: []].append(delivery.seq) }
        for seqs in bySession.values {
            duplicated += seqs.count - Set(seqs).count
            outOfOrder += zip(seqs, seqs.dropFirst()).filter { $0.0 >= $0.1 }.count
        }
        let distinct = Set(deliveries.map(\.seq))
        return (distinct, duplicated, outOfOrder, deliveries.count - distinct.count - duplicated)
    }
}
