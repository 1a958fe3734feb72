extension Supervisor {
    /// Sessions one after another: each runs until a shutdown or its end for good (`GoAway` without
    /// reconnect, a rejected login, a logout); then, when the configuration says so, the next waits
    /// for the app's ``LongLinkClient/login(_:)``. Throws the last session's end, unless the app
    /// logged out or logged in again since.
    func run() async throws {
        await directory.setTLS(tls)
        await prepare(refreshing: true)
        await core.setSupervising(true)
        var session = self
        // Sessions that ended for good soon after they began, in a row: a server that kicks at
        // every login is met with the backoff, whoever calls login(_:).
        var shortSessions = 0
        // Why the last session's last link was lost (or its login failed).
        var lost: DisconnectCause?
        while true {
            let began = configuration.clock.now
            lost = await session.superviseSession()
            guard let (step, byApp) = await nextLoginStep(lost: lost) else { break }
            // A logout is the app's choice (switching users, say): no reason to wait.
            let short = !byApp && configuration.clock.now - began < configuration.backoff.resetAfter
            shortSessions = short ? shortSessions + 1 : 0
            session.configuration.login = step
            if shortSessions > 0, await !waitBeforeSession(afterShortSessions: shortSessions, lost: lost) { break }
        }
        await core.setSupervising(false)
        let end = await core.sessionEnd
        await core.stopped(
            ConnectionState(
                phase: .stopped, reason: end.map { "stopped: \($0.error.message)" } ?? "shut down",
                error: end?.error, cause: end.map { Self.cause(of: $0, lost: lost) } ?? .requestedByApp))
        if let end, !end.byApp { throw end.error }
    }

    /// After a session ended for good: the app's next login step and whether the app ended the
    /// session, or nil to stop (a shutdown, or a configuration that stops at the end of a session).
    private func nextLoginStep(lost: DisconnectCause?) async -> (LoginStep, byApp: Bool)? {
        guard configuration.waitsForLoginAfterSessionEnd, await !core.isShuttingDown,
            let end = await core.sessionEnd
        else { return nil }
        let cause = Self.cause(of: end, lost: lost)
        await core.setState(
            ConnectionState(
                phase: .waitingToReconnect, reason: "session ended: \(cause); waiting for login", error: end.error,
                cause: cause))
        return await core.waitForLogin().map { ($0, end.byApp) }
    }

    /// Why a session ended for good: the app's logout, else what ended its last link (a kick, a
    /// `GoAway` without reconnect, a rejected login), else its error.
    private static func cause(
        of end: (error: LongLinkError, byApp: Bool), lost: DisconnectCause?
    ) -> DisconnectCause {
        if end.byApp { return .requestedByApp }
        return lost ?? DisconnectCause(.closed(end.error))
    }

    /// The backoff's delay before a session that follows short ones; false when the client shuts down meanwhile.
    private func waitBeforeSession(afterShortSessions count: Int, lost: DisconnectCause?) async -> Bool {
        let delay = configuration.backoff.delay(forAttempt: count - 1, random: .random(in: 0...1))
        await core.setState(
            ConnectionState(phase: .waitingToReconnect, reason: "logging in again", retryDelay: delay, cause: lost))
        while true {
            switch await core.waitToRetry(delay) {
            case .shutdown: return false
            case .timer: return true
            // A network change says nothing about a server that ends sessions: the delay stands.
            case .networkChanged: continue
            }
        }
    }
}
