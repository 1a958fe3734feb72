extension LongLinkClient {
    /// Starts the next session with `step` as its login step, on this client, after the last
    /// session ended for good: `GoAway` without reconnect (a kick), a rejected login, or
    /// ``logout(reason:)``. Needs ``ClientConfiguration/waitsForLoginAfterSessionEnd`` and ``run()``
    /// running (directly or in ``withLongLinkClient(configuration:isolation:_:)``).
    ///
    /// ```swift
    /// try await client.login { session in
    ///     _ = try await session.send(Login(user: "bob", token: token))
    ///     session.loggedIn(as: "bob")
    /// }
    /// ```
    ///
    /// Returns once the supervisor has taken the step: requests made from then on queue behind
    /// the new login, as at the start. It does not wait for the login itself; a rejected one ends
    /// the new session as the first would (see ``connectionStates``). Nothing of the last session
    /// reaches the next: its requests failed with its end, its push streams ended, the pushes it
    /// held were dropped (the server keeps a principal's pushes for that principal), and the
    /// ``cache`` is emptied here. Streams made from now on receive the new session's pushes; a
    /// stream made while no session runs ends at once with the last one's end.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/failedPrecondition`` while a session runs (call
    /// ``logout(reason:)`` first: a login never replaces a running session's user silently), while
    /// another login waits to be taken, or when the configuration or `run()` do not allow it; and
    /// ``LongLinkError/Code-swift.struct/shutdown`` once the client shuts down. Logins that follow
    /// sessions the server ended soon after they began wait for the ``ClientConfiguration/backoff``,
    /// so a server that kicks at every login is not met with a loop; after a logout none waits.
    public func login(_ step: @escaping @Sendable (LoginSession) async throws -> Void) async throws {
        try await core.login(step)
    }

    /// Ends the running session: the client acknowledges the pushes the app took, says `GoAway`
    /// and closes; requests queued and in flight fail with
    /// ``LongLinkError/Code-swift.struct/unauthenticated`` (the message says `reason`), and push
    /// streams end with that error. ``run()`` then waits for ``login(_:)`` when
    /// ``ClientConfiguration/waitsForLoginAfterSessionEnd`` is set, and otherwise returns (without
    /// throwing: the app asked for it). Does nothing when no session runs.
    public func logout(reason: String = "logged out") async {
        await core.logout(LongLinkError(code: .unauthenticated, message: reason))
    }
}
