internal import LongLinkCore
internal import LongLinkTransport

extension ClientCore {
    // MARK: Credentials with a lifetime (ClientConfiguration.credentials)

    /// A fresh credential from the provider for the login on `generation`, bounded by the timeout.
    /// A credential that has expired already is refused with `UNAUTHENTICATED`: the login fails
    /// for good instead of presenting it (and reconnecting forever).
    func credentialForLogin(generation: UInt64) async throws -> Credential {
        let credential = try await fetchCredential()
        machine.credentialForLogin(generation: generation, expiresAt: credential.expiresAt)
        return credential
    }

    /// The login step on `generation` says when its credential expires (from the login's reply).
    func credentialExpires(generation: UInt64, at expiresAt: ContinuousClock.Instant?) {
        machine.credentialForLogin(generation: generation, expiresAt: expiresAt)
    }

    /// The login on `generation` succeeded and its link carries the session now: its chain starts,
    /// and a refresh still running for an earlier link is abandoned.
    func credentialLoggedIn(generation: UInt64) {
        let actions = machine.credentialLoggedIn(generation: generation, now: clock.now, random: .random(in: 0...1))
        guard !actions.isEmpty else { return }
        abandonCredentialRefresh()
        run(actions)
    }

    /// The current link ended (a reconnect's login starts the next chain), or the session did.
    func credentialLinkEnded() {
        abandonCredentialRefresh()
        run(machine.credentialLinkEnded())
    }

    /// ``ClientTimer/credential`` fired: a refresh starts, or the link whose credential expired closes.
    func credentialTimerFired() {
        let actions = machine.credentialTimerFired(now: clock.now)
        if machine.credentials?.live == nil { abandonCredentialRefresh() }
        run(actions)
    }

    /// Runs the refresh `attempt` on the link of `generation` (the machine's `refreshCredential`
    /// action): a new credential from the provider, sent to the refresh method on that link; the
    /// machine hears how it went. `current`: when the credential in force expires.
    func refreshCredential(_ generation: UInt64, attempt: UInt64, expiresAt current: ContinuousClock.Instant) {
        guard let refresh = configuration.credentials else { return }
        waiters.credentialRefresh?.cancel()
        waiters.credentialRefresh = Task {
            let outcome: Result<ContinuousClock.Instant?, any Error>
            do {
                let credential = try await fetchCredential()
                if let next = credential.expiresAt, next <= current {
                    // The same credential again (a static one): sending it renews nothing.
                    throw LongLinkError(code: .unauthenticated, message: "the provider handed out no newer credential")
                }
                let request = PendingRequest(
                    id: makeRequestID(), method: refresh.method, payload: Array(credential.token.utf8),
                    deadline: clock.now.advanced(by: refresh.timeout), idempotent: false, bypassesGate: true,
                    linkGeneration: generation)
                _ = try await perform(request)
                outcome = .success(credential.expiresAt)
            } catch {
                outcome = .failure(error)
            }
            credentialRefreshEnded(generation, attempt: attempt, outcome)
        }
    }

    /// The refresh `attempt` on `generation` ended: the machine decides what follows.
    private func credentialRefreshEnded(
        _ generation: UInt64, attempt: UInt64, _ outcome: Result<ContinuousClock.Instant?, any Error>
    ) {
        let now = clock.now
        let random = Double.random(in: 0...1)
        switch outcome {
        case .success(let expiresAt):
            run(
                machine.credentialRefreshed(
                    generation: generation, attempt: attempt, expiresAt: expiresAt, now: now, random: random))
        case .failure:
            run(machine.credentialRefreshFailed(generation: generation, attempt: attempt, now: now, random: random))
        }
    }

    /// The refresh under way is of no use any more (its link ended, another login started a
    /// chain, the credential expired): cancelled, its answer would be ignored anyway.
    private func abandonCredentialRefresh() {
        waiters.credentialRefresh?.cancel()
        waiters.credentialRefresh = nil
    }

    /// The provider's credential, bounded by the timeout; one expired already is refused.
    private nonisolated func fetchCredential() async throws -> Credential {
        guard let refresh = configuration.credentials else {
            throw LongLinkError(code: .failedPrecondition, message: "no credentials in the configuration")
        }
        let credential = try await Self.within(refresh.timeout, clock: configuration.clock, refresh.provider)
        if let expiresAt = credential.expiresAt, expiresAt <= clock.now {
            throw LongLinkError(
                code: .unauthenticated, message: "credential expired: the provider handed out an expired credential",
                underlying: LossMark.credentialExpired)
        }
        return credential
    }

    /// Runs `body`, throwing `DEADLINE_EXCEEDED` (and cancelling it) when it takes longer than
    /// `timeout` by `clock`: a provider that hangs costs one abandoned task, never the client.
    nonisolated static func within<T: Sendable>(
        _ timeout: Duration, clock: any LongLinkClock, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome = Locked<CheckedContinuation<T, any Error>?>(nil)
        let work = Locked<(Task<Void, Never>?, (any ScheduledWork)?)>((nil, nil))
        return try await withCheckedThrowingContinuation { continuation in
            outcome.withLock { $0 = continuation }
            let finish: @Sendable (Result<T, any Error>) -> Void = { result in
                let taken = outcome.withLock { slot in
                    let continuation = slot
                    slot = nil
                    return continuation
                }
                guard let continuation = taken else { return }
                let (task, timer) = work.withLock { $0 }
                task?.cancel()
                timer?.cancel()
                continuation.resume(with: result)
            }
            let task = Task {
                do { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            let timer = clock.schedule(at: clock.now.advanced(by: timeout)) {
                finish(
                    .failure(
                        LongLinkError(
                            code: .deadlineExceeded, message: "the credential provider took longer than \(timeout)")))
            }
            work.withLock { $0 = (task, timer) }
        }
    }
}
