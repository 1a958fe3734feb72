internal import LongLinkWire

/// Logging in again after a session ended for good, and the app's logout: whether a login may
/// start, the next session beginning, and what a logout says before the session ends.
extension ClientStateMachine {
    /// Why the app's login cannot start now, if it cannot: the client shuts down, `run()` does not
    /// wait for logins (`waitsForLogin`: the configuration says it does), a session is running, or
    /// another login waits for the supervisor already (`loginPending`).
    func loginRefusal(waitsForLogin: Bool, loginPending: Bool) -> LongLinkError? {
        if shuttingDown { return LongLinkError(code: .shutdown, message: "the client is shutting down") }
        guard relogin.supervising, waitsForLogin else {
            return LongLinkError(
                code: .failedPrecondition,
                message: "login(_:) needs run() running with waitsForLoginAfterSessionEnd set")
        }
        guard terminalError != nil else {
            return LongLinkError(code: .failedPrecondition, message: "a session is running: call logout() first")
        }
        guard !loginPending else {
            return LongLinkError(code: .failedPrecondition, message: "a login is already under way")
        }
        return nil
    }

    /// The supervisor took the app's login: requests are admitted again. False when no session
    /// ended or the client shuts down (nothing to reset then).
    mutating func beginSession() -> Bool {
        guard links.reopen() else { return false }
        relogin.loggedOut = false
        return true
    }

    /// The app ends the session on `liveLink` (the current link, if it has not ended): what the app
    /// took is acknowledged and the server is told `GoAway` on an established link; the core then
    /// ends the session. Nil when it ended already or the client shuts down.
    mutating func logout(liveLink: UInt64?) -> [Action]? {
        guard terminalError == nil, !shuttingDown else { return nil }
        relogin.loggedOut = true
        guard let liveLink, links.isEstablished(liveLink) else { return [] }
        var actions: [Action] = []
        if links.synced { actions = ledger.flushAcks().map(Action.pushes) }
        return actions + [.send(.goAway(Frame.GoAway(code: .ok, reason: "client logging out")), on: liveLink)]
    }
}
