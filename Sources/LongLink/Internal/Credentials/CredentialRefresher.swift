internal import LongLinkTransport
import Synchronization

/// Performs what the ``CredentialSchedule`` decides: one timer at its next deadline, the refresh
/// requests (the provider's new token, sent on the link the login ran on), and the end of a link
/// whose credential expired. The supervisor tells it of logins and of links that end.
actor CredentialRefresher {
    private let core: ClientCore
    private let refresh: CredentialRefresh
    private let clock: any LongLinkClock
    private let makeRequestID: @Sendable () -> UInt64
    private var schedule: CredentialSchedule
    /// The expiry the login running on a link asked for (``LoginSession/credential()``), until
    /// the login succeeds.
    private var loginExpiry: (generation: UInt64, expiresAt: ContinuousClock.Instant?)?
    private var timer: (any ScheduledWork)?
    /// Tells the timer that fired from one replaced since.
    private var timerToken: UInt64 = 0
    /// The refresh under way, cancelled when its link ends (at most one: see the schedule).
    private var task: Task<Void, Never>?

    init(
        core: ClientCore, refresh: CredentialRefresh, clock: any LongLinkClock,
        makeRequestID: @escaping @Sendable () -> UInt64
    ) {
        self.core = core
        self.refresh = refresh
        self.clock = clock
        self.makeRequestID = makeRequestID
        self.schedule = CredentialSchedule(lead: refresh.lead, jitter: refresh.jitter, backoff: refresh.backoff)
    }

    /// A fresh credential from the provider for the login on `generation`, bounded by the timeout.
    /// A credential that has expired already is refused with `UNAUTHENTICATED`: the login fails
    /// for good instead of presenting it (and reconnecting forever).
    func credentialForLogin(generation: UInt64) async throws -> Credential {
        let credential = try await fetch()
        loginExpiry = (generation, credential.expiresAt)
        return credential
    }

    /// The login step on `generation` says when its credential expires (from the login's reply).
    func loginExpires(generation: UInt64, at expiresAt: ContinuousClock.Instant?) {
        loginExpiry = (generation, expiresAt)
    }

    /// The login on `generation` succeeded and its link carries the session now: its chain starts.
    func loggedIn(generation: UInt64) {
        guard let login = loginExpiry, login.generation == generation else { return }
        loginExpiry = nil
        task?.cancel()
        task = nil
        guard let expiresAt = login.expiresAt else {
            schedule.sessionEnded()
            rearm()
            return
        }
        perform(
            schedule.loggedIn(generation: generation, expiresAt: expiresAt, now: clock.now, random: .random(in: 0...1)))
    }

    /// The current link ended (a reconnect's login starts the next chain), or the session did.
    func linkEnded() {
        if let generation = schedule.live?.generation { schedule.linkEnded(generation: generation) }
        loginExpiry = nil
        task?.cancel()
        task = nil
        rearm()
    }

    private func fetch() async throws -> Credential {
        let credential = try await Self.within(refresh.timeout, clock: clock, refresh.provider)
        if let expiresAt = credential.expiresAt, expiresAt <= clock.now {
            throw LongLinkError(
                code: .unauthenticated, message: "credential expired: the provider handed out an expired credential",
                underlying: LossMark.credentialExpired)
        }
        return credential
    }

    private func perform(_ actions: [CredentialSchedule.Action]) {
        for action in actions {
            switch action {
            case .refresh(let generation, let attempt):
                task = Task { await self.runRefresh(generation: generation, attempt: attempt) }
            case .expire(let generation):
                task?.cancel()
                task = nil
                // Marked, so that the state says "credential expired" (``DisconnectCause/init(_:)``).
                let error = LongLinkError(
                    code: .unauthenticated, message: "credential expired", underlying: LossMark.credentialExpired)
                Task { await core.closeLink(generation, error: error) }
            }
        }
        rearm()
    }

    private func runRefresh(generation: UInt64, attempt: UInt64) async {
        do {
            let credential = try await fetch()
            if let current = schedule.live?.expiresAt, let next = credential.expiresAt, next <= current {
                // The same credential again (a static one): sending it renews nothing.
                throw LongLinkError(code: .unauthenticated, message: "the provider handed out no newer credential")
            }
            let request = PendingRequest(
                id: makeRequestID(), method: refresh.method, payload: Array(credential.token.utf8),
                deadline: clock.now.advanced(by: refresh.timeout), idempotent: false, bypassesGate: true,
                linkGeneration: generation)
            _ = try await core.perform(request)
            guard let expiresAt = credential.expiresAt else {
                // The new credential does not expire: nothing more to refresh on this link.
                if schedule.live?.generation == generation, schedule.live?.inFlight == attempt {
                    schedule.sessionEnded()
                    rearm()
                }
                return
            }
            perform(
                schedule.refreshSucceeded(
                    generation: generation, attempt: attempt, expiresAt: expiresAt, now: clock.now,
                    random: .random(in: 0...1)))
        } catch {
            perform(
                schedule.refreshFailed(
                    generation: generation, attempt: attempt, now: clock.now, random: .random(in: 0...1)))
        }
    }

    /// One timer, at the schedule's next deadline.
    private func rearm() {
        timer?.cancel()
        timer = nil
        timerToken &+= 1
        guard let wakeAt = schedule.wakeAt else { return }
        let token = timerToken
        timer = clock.schedule(at: wakeAt) { Task { await self.fired(token) } }
    }

    private func fired(_ token: UInt64) {
        guard token == timerToken else { return }
        timer = nil
        perform(schedule.due(now: clock.now))
    }

    /// Runs `body`, throwing `DEADLINE_EXCEEDED` (and cancelling it) when it takes longer than
    /// `timeout` by `clock`: a provider that hangs costs one abandoned task, never the refresher.
    static func within<T: Sendable>(
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
            let task = Task { finish(await Result { try await body() }) }
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

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    fileprivate init(_ body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
