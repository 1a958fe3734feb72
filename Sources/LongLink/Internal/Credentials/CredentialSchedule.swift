/// When to refresh the session's credential and when it expires: a pure value, fed the events
/// (a login with an expiry, a refresh answered or failed, the link lost, the session ended, the
/// timer) and returning what to do. It lives in the client's machine
/// (``ClientStateMachine/credentials``, `+Credentials`), whose one timer ``ClientTimer/credential``
/// fires at ``wakeAt``; the core performs the refreshes (`ClientCore+Credentials`).
///
/// One chain per link: each refresh carries an attempt number and the link's generation, and an
/// answer to anything but the attempt under way on the current link is ignored. So a refresh
/// answered after a reconnect (or a migration) never starts a second chain beside the one the
/// new login started.
struct CredentialSchedule: Sendable {
    /// What the schedule asks for.
    enum Action: Equatable, Sendable {
        /// Ask the provider for a new credential and send it as the refresh request on `generation`.
        case refresh(generation: UInt64, attempt: UInt64)
        /// The credential expired on the link of `generation` without a renewal: end that link (the
        /// client reconnects and logs in with a new credential from the provider).
        case expire(generation: UInt64)
    }

    /// The credential in force on a link.
    struct Live: Equatable, Sendable {
        var generation: UInt64
        var expiresAt: ContinuousClock.Instant
        /// When the next refresh starts (nil while one is under way).
        var refreshAt: ContinuousClock.Instant?
        /// The refresh under way, if any.
        var inFlight: UInt64?
        /// Failed refreshes in a row (the backoff's attempt).
        var failures = 0
    }

    let lead: Duration
    /// The fraction of ``lead`` by which a refresh may start later, at random (0 ... 1): clients
    /// that logged in together do not all refresh together.
    let jitter: Double
    let backoff: Backoff

    private(set) var live: Live?
    /// The expiry the login running on a link asked for (the provider's credential, or what the
    /// login's reply said), until that login succeeds.
    private(set) var loginExpiry: (generation: UInt64, expiresAt: ContinuousClock.Instant?)?
    /// Attempt numbers, never reused.
    private var lastAttempt: UInt64 = 0

    init(lead: Duration, jitter: Double, backoff: Backoff) {
        self.lead = lead
        self.jitter = min(max(jitter, 0), 1)
        self.backoff = backoff
    }

    /// When the credential timer should fire next: the refresh's start or the expiry.
    var wakeAt: ContinuousClock.Instant? {
        guard let live else { return nil }
        return [live.refreshAt, live.expiresAt].compactMap { $0 }.min()
    }

    /// The login running on `generation` got a credential that expires at `expiresAt` (nil: never),
    /// or its reply said so: what ``loginSucceeded(generation:now:random:)`` starts from.
    mutating func loginExpires(generation: UInt64, at expiresAt: ContinuousClock.Instant?) {
        loginExpiry = (generation, expiresAt)
    }

    /// The login on `generation` succeeded: the chain of its credential starts, or, when it does
    /// not expire, nothing is scheduled. Nil when no login on `generation` asked for a credential
    /// (the schedule is left as it was).
    mutating func loginSucceeded(generation: UInt64, now: ContinuousClock.Instant, random: Double) -> [Action]? {
        guard let login = loginExpiry, login.generation == generation else { return nil }
        loginExpiry = nil
        guard let expiresAt = login.expiresAt else {
            live = nil
            return []
        }
        return loggedIn(generation: generation, expiresAt: expiresAt, now: now, random: random)
    }

    /// A login on `generation` succeeded with a credential that expires at `expiresAt`: the chain
    /// of that link starts (any other ends). `random` is in 0 ... 1.
    mutating func loggedIn(
        generation: UInt64, expiresAt: ContinuousClock.Instant, now: ContinuousClock.Instant, random: Double
    ) -> [Action] {
        live = Live(generation: generation, expiresAt: expiresAt)
        return scheduleRefresh(now: now, random: random)
    }

    /// The refresh `attempt` on `generation` renewed the credential until `expiresAt`.
    mutating func refreshSucceeded(
        generation: UInt64, attempt: UInt64, expiresAt: ContinuousClock.Instant, now: ContinuousClock.Instant,
        random: Double
    ) -> [Action] {
        guard var current = live, current.generation == generation, current.inFlight == attempt else { return [] }
        current.inFlight = nil
        current.failures = 0
        current.expiresAt = expiresAt
        live = current
        return scheduleRefresh(now: now, random: random)
    }

    /// The refresh `attempt` on `generation` failed (the provider failed or hung, the server
    /// refused, the request timed out): try again after the backoff, never past the expiry. The
    /// link stays.
    mutating func refreshFailed(generation: UInt64, attempt: UInt64, now: ContinuousClock.Instant, random: Double)
        -> [Action]
    {
        guard var current = live, current.generation == generation, current.inFlight == attempt else { return [] }
        current.inFlight = nil
        let delay = backoff.delay(forAttempt: current.failures, random: random)
        current.failures += 1
        current.refreshAt = min(now.advanced(by: delay), current.expiresAt)
        live = current
        return due(now: now)
    }

    /// The link of `generation` ended (a reconnect follows, with its own login), or the session
    /// ended: nothing is scheduled until the next login.
    mutating func linkEnded(generation: UInt64) {
        if live?.generation == generation { live = nil }
    }

    /// The current link ended, whichever it was: its chain ends, and a login under way on it is
    /// forgotten (the next link's login starts its own).
    mutating func currentLinkEnded() {
        live = nil
        loginExpiry = nil
    }

    /// The refresh `attempt` on `generation` was answered with a credential that does not expire:
    /// nothing more to refresh on this link.
    mutating func refreshSucceededWithoutExpiry(generation: UInt64, attempt: UInt64) {
        guard live?.generation == generation, live?.inFlight == attempt else { return }
        live = nil
    }

    /// The session ended for good, or the client stops.
    mutating func sessionEnded() {
        live = nil
    }

    /// The timer fired: what is due at `now`.
    mutating func due(now: ContinuousClock.Instant) -> [Action] {
        guard var current = live else { return [] }
        if now >= current.expiresAt {
            live = nil
            return [.expire(generation: current.generation)]
        }
        guard let refreshAt = current.refreshAt, now >= refreshAt, current.inFlight == nil else { return [] }
        lastAttempt += 1
        current.inFlight = lastAttempt
        current.refreshAt = nil
        live = current
        return [.refresh(generation: current.generation, attempt: lastAttempt)]
    }

    /// Sets the next refresh `lead` (less up to `jitter` of it) before the expiry; a credential
    /// that lives less than the lead is refreshed halfway through what is left.
    private mutating func scheduleRefresh(now: ContinuousClock.Instant, random: Double) -> [Action] {
        guard var current = live else { return [] }
        let left = current.expiresAt - now
        let lead = self.lead - self.lead * (jitter * min(max(random, 0), 1))
        current.refreshAt = left > lead ? current.expiresAt.advanced(by: .zero - lead) : now.advanced(by: left / 2)
        live = current
        return due(now: now)
    }
}
