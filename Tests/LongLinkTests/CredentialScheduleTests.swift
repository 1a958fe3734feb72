import Testing

@testable import LongLink

/// The refresh schedule on its own: when a refresh starts, retries, the expiry, and the races
/// (an answer after a reconnect, an expiry while offline) as inputs in the order they happen.
@Suite("Credential schedule")
struct CredentialScheduleTests {
    let t0 = ContinuousClock.now
    let backoff = Backoff(initial: .seconds(1), maximum: .seconds(8), multiplier: 2, jitter: false)

    func schedule(lead: Duration = .seconds(60), jitter: Double = 0.2) -> CredentialSchedule {
        CredentialSchedule(lead: lead, jitter: jitter, backoff: backoff)
    }

    func at(_ seconds: Int64) -> ContinuousClock.Instant { t0.advanced(by: .seconds(seconds)) }

    @Test func aRefreshStartsTheLeadBeforeTheExpiryWithinTheJitter() {
        var early = schedule()
        #expect(early.loggedIn(generation: 1, expiresAt: at(600), now: t0, random: 0).isEmpty)
        #expect(early.wakeAt == at(540))
        var late = schedule()
        _ = late.loggedIn(generation: 1, expiresAt: at(600), now: t0, random: 1)
        #expect(late.wakeAt == at(552), "up to 20% of the 60 s lead later")
        #expect(early.due(now: at(539)).isEmpty)
        #expect(early.due(now: at(540)) == [.refresh(generation: 1, attempt: 1)])
        #expect(early.due(now: at(541)).isEmpty, "one refresh at a time")
        #expect(early.wakeAt == at(600), "the expiry stays armed while it runs")
    }

    @Test func aSuccessSchedulesTheNextFromTheNewExpiry() {
        var s = schedule(jitter: 0)
        _ = s.loggedIn(generation: 1, expiresAt: at(600), now: t0, random: 0)
        _ = s.due(now: at(540))
        #expect(s.refreshSucceeded(generation: 1, attempt: 1, expiresAt: at(1_200), now: at(541), random: 0).isEmpty)
        #expect(s.wakeAt == at(1_140))
        #expect(s.due(now: at(600)).isEmpty, "the old expiry no longer ends the link")
        #expect(s.due(now: at(1_140)) == [.refresh(generation: 1, attempt: 2)])
    }

    @Test func aCredentialShorterThanTheLeadIsRefreshedHalfwayThrough() {
        var s = schedule()
        _ = s.loggedIn(generation: 1, expiresAt: at(20), now: t0, random: 0)
        #expect(s.wakeAt == at(10))
    }

    /// Failures (a provider that fails or hangs, a refresh that times out or is refused) retry
    /// with the backoff, never past the expiry, and never end the link before it.
    @Test func failuresRetryWithBackoffUntilTheExpiryThenTheLinkEnds() {
        var s = schedule(jitter: 0)
        _ = s.loggedIn(generation: 1, expiresAt: at(70), now: t0, random: 0)
        #expect(s.due(now: at(10)) == [.refresh(generation: 1, attempt: 1)])
        #expect(s.refreshFailed(generation: 1, attempt: 1, now: at(20), random: 0).isEmpty)
        #expect(s.wakeAt == at(21))
        #expect(s.due(now: at(21)) == [.refresh(generation: 1, attempt: 2)])
        _ = s.refreshFailed(generation: 1, attempt: 2, now: at(22), random: 0)
        #expect(s.wakeAt == at(24), "the backoff doubles")
        _ = s.due(now: at(24))
        _ = s.refreshFailed(generation: 1, attempt: 3, now: at(68), random: 0)
        #expect(s.live?.refreshAt == at(70), "a retry never lands past the expiry")
        #expect(s.due(now: at(70)) == [.expire(generation: 1)])
        #expect(s.wakeAt == nil)
        #expect(s.refreshFailed(generation: 1, attempt: 4, now: at(71), random: 0).isEmpty)
    }

    /// A refresh answered after a reconnect belongs to the old link: the new login's chain goes
    /// on alone (no second chain), and a late failure does not reschedule it either.
    @Test func aRefreshAnsweredAfterAReconnectStartsNoSecondChain() {
        var s = schedule(jitter: 0)
        _ = s.loggedIn(generation: 1, expiresAt: at(600), now: t0, random: 0)
        #expect(s.due(now: at(540)) == [.refresh(generation: 1, attempt: 1)])
        s.linkEnded(generation: 1)
        _ = s.loggedIn(generation: 2, expiresAt: at(1_200), now: at(545), random: 0)
        let chain = s.live
        #expect(s.refreshSucceeded(generation: 1, attempt: 1, expiresAt: at(5_000), now: at(546), random: 0).isEmpty)
        #expect(s.refreshFailed(generation: 1, attempt: 1, now: at(546), random: 0).isEmpty)
        #expect(s.live == chain)
        #expect(s.due(now: at(1_140)) == [.refresh(generation: 2, attempt: 2)])
        // The same race within one link: an answer to an attempt that is no longer the one under way.
        #expect(s.refreshSucceeded(generation: 2, attempt: 1, expiresAt: at(9_000), now: at(1_141), random: 0).isEmpty)
        #expect(s.live?.inFlight == 2)
    }

    /// Offline across the expiry: no link to end, nothing scheduled; the reconnect's login (through
    /// the provider) starts the next chain.
    @Test func anExpiryWhileOfflineEndsNothingAndWaitsForTheNextLogin() {
        var s = schedule()
        _ = s.loggedIn(generation: 1, expiresAt: at(600), now: t0, random: 0)
        s.linkEnded(generation: 1)
        #expect(s.wakeAt == nil)
        #expect(s.due(now: at(700)).isEmpty)
        s.linkEnded(generation: 7)
        _ = s.loggedIn(generation: 2, expiresAt: at(1_300), now: at(700), random: 0)
        #expect(s.live?.generation == 2)
        s.linkEnded(generation: 1)
        #expect(s.live?.generation == 2, "the end of an older link leaves the current chain")
        s.sessionEnded()
        #expect(s.wakeAt == nil)
    }

    @Test func aLoginWithAnExpiredCredentialEndsAtOnce() {
        var s = schedule()
        #expect(s.loggedIn(generation: 3, expiresAt: at(5), now: at(5), random: 0) == [.expire(generation: 3)])
    }
}
