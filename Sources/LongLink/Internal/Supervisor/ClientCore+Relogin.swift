internal import LongLinkWire

/// The app's login step (``ClientConfiguration/login``, or the one given to ``LongLinkClient/login(_:)``).
typealias LoginStep = @Sendable (LoginSession) async throws -> Void

/// The bookkeeping of logging in again after a session ended for good: the supervisor waits for
/// the app's ``LongLinkClient/login(_:)`` (or a shutdown), which hands it the next login step (the
/// waiting tasks are the core's, in ``ClientCore/Waiters``).
struct Relogin {
    /// `run()` supervises and, when the configuration says so, waits for a login after a session ends.
    var supervising = false
    var lastLoginID: UInt64 = 0
    /// The app ended the session (``LongLinkClient/logout(reason:)``): `run()` does not throw for it.
    var loggedOut = false
    /// How the last session ended: what a call made in it gets when it arrives after the next
    /// session began.
    var lastEnd: LongLinkError?
}

extension ClientCore {
    func setSupervising(_ value: Bool) { machine.relogin.supervising = value }

    /// A session ended for good and no other began: what `run()` ends with, unless the app logged out.
    var sessionEnd: (error: LongLinkError, byApp: Bool)? {
        machine.terminalError.map { ($0, machine.relogin.loggedOut) }
    }

    var isShuttingDown: Bool { machine.shuttingDown }

    /// The app's login: returns once the supervisor has taken `step` and requests are admitted
    /// again (they queue behind the new login).
    func login(_ step: @escaping LoginStep) async throws {
        machine.relogin.lastLoginID += 1
        let id = machine.relogin.lastLoginID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (caller: CheckedContinuation<Void, any Error>) in
                if let refusal = loginRefusal {
                    caller.resume(throwing: refusal)
                } else if Task.isCancelled {
                    caller.resume(throwing: CancellationError())
                } else if let waiter = waiters.login {
                    waiters.login = nil
                    beginSession()
                    caller.resume()
                    waiter.resume(returning: step)
                } else {
                    // The supervisor has not reached its wait yet (the session ended a moment ago).
                    waiters.pendingLogin = (id, step, caller)
                }
            }
        } onCancel: {
            onLoop { $0.cancelLogin(id) }
        }
    }

    /// The caller of a login the supervisor has not taken yet was cancelled.
    private func cancelLogin(_ id: UInt64) {
        guard let pending = waiters.pendingLogin, pending.id == id else { return }
        waiters.pendingLogin = nil
        pending.caller.resume(throwing: CancellationError())
    }

    /// Why a login cannot start now, if it cannot (``ClientStateMachine/loginRefusal(waitsForLogin:loginPending:)``).
    private var loginRefusal: LongLinkError? {
        machine.loginRefusal(
            waitsForLogin: configuration.waitsForLoginAfterSessionEnd, loginPending: waiters.pendingLogin != nil)
    }

    /// The supervisor's wait for the app's next login step; nil when the client shuts down first.
    func waitForLogin() async -> LoginStep? {
        await withCheckedContinuation { waiter in
            if machine.shuttingDown {
                waiter.resume(returning: nil)
            } else if let pending = waiters.pendingLogin {
                waiters.pendingLogin = nil
                beginSession()
                pending.caller.resume()
                waiter.resume(returning: pending.step)
            } else {
                waiters.login = waiter
            }
        }
    }

    /// Admits requests again for the next principal, through the same reset as the end of the
    /// last session (``clearSession(_:)``): what belonged to the last one went with its end, and
    /// whatever was made for it since (a call, a stream) is refused from now on.
    private func beginSession() {
        let lastEnd = endedSessionError
        guard machine.beginSession() else { return }
        clearSession(lastEnd)
    }

    /// The client shuts down: the supervisor's wait and a login waiting for it end.
    func endLoginWaits() {
        waiters.login?.resume(returning: nil)
        waiters.login = nil
        waiters.pendingLogin?.caller.resume(
            throwing: LongLinkError(code: .shutdown, message: "the client is shutting down"))
        waiters.pendingLogin = nil
    }

    /// The app ends the session: what the app took is acknowledged, the server is told `GoAway`,
    /// and everything pending fails with `error`, as after a kick.
    func logout(_ error: LongLinkError) {
        guard let actions = machine.logout(liveLink: liveLink?.generation) else { return }
        run(actions)
        terminate(error)
        // A supervisor waiting to reconnect sees the end now rather than after its delay.
        wakeRetry(.timer)
    }
}
