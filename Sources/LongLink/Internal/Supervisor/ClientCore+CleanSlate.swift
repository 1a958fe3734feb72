/// A user switch is a clean slate: the one reset that every end of a session (a logout, a kick, a
/// rejected login) and every login after one go through, so that nothing the last user's session
/// held shapes what the next user gets.
extension ClientCore {
    /// The number of the current session, taken by calls, streams and subscriptions when the app
    /// makes them (see ``Shared/session``).
    nonisolated var session: UInt64 { shared.session.load(ordering: .acquiring) }

    /// True when `session` is the current one.
    func isCurrent(session: UInt64) -> Bool {
        session == shared.session.load(ordering: .relaxed)
    }

    /// What a call, stream or subscription made in a session that ended gets when it reaches the
    /// core after that: the session's end.
    var endedSessionError: LongLinkError {
        machine.terminalError ?? machine.relogin.lastEnd
            ?? LongLinkError(code: .cancelled, message: "the session it was made in ended")
    }

    /// Everything that belonged to the session that ended with `error` goes, and the session
    /// number moves on, so that what was made for it and reaches the core later is refused:
    ///
    /// - the requests, queued or written (their callers get `error`), with their resend state and
    ///   deadlines: the replay book;
    /// - the push streams (they end with `error`) and the whole push ledger: held pushes, the
    ///   delivered seqs, a deferral, a wanted `Sync`, acks owed, the links' seq spaces; and the
    ///   ack timer;
    /// - the run-time subscriptions (the static ones stay, their retry state reset);
    /// - the calls sharing a request (their callers get `error`);
    /// - the cached replies, in memory and on disk.
    ///
    /// Links are the caller's to close. Idempotent: a login after the end calls it again.
    func clearSession(_ error: LongLinkError) {
        let next = shared.session.add(1, ordering: .releasing).newValue
        machine.relogin.lastEnd = error
        fail(machine.removeAllRequests(), with: error)
        machine.deadlines.removeAll()
        finishConsumers(error)
        endRunTimeSubscriptions(error)
        coalescer.endAll(with: error)
        responseCache.endSession(next: next)
    }
}
