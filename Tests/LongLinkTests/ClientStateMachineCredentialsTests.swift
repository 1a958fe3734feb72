import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLink

/// The credential's refreshes and expiry as the client's one machine decides them: its inputs (a
/// login's credential and success, a refresh's answer, the link's end) and its one timer by id,
/// ``ClientTimer/credential``. No clock, no provider: each is an event of the test.
@Suite("Client state machine: credentials", .sharedMachine)
struct ClientStateMachineCredentialsTests {
    typealias Action = MachineDriver.Machine.Action
    let t0 = ContinuousClock.now

    func at(_ seconds: Int64) -> ContinuousClock.Instant { t0.advanced(by: .seconds(seconds)) }

    /// A driver whose machine refreshes 60 s before the expiry, without jitter.
    func driver() -> MachineDriver {
        var driver = MachineDriver()
        driver.machine.credentials = CredentialSchedule(
            lead: .seconds(60), jitter: 0, backoff: Backoff(initial: .seconds(1), maximum: .seconds(8), jitter: false))
        return driver
    }

    @Test func aLoginArmsTheTimerWhichStartsTheRefreshAndAFailureRetriesOnTheSameLink() {
        var driver = driver()
        let link = driver.connect()
        driver.machine.credentialForLogin(generation: link, expiresAt: at(600))
        let armed = driver.machine.credentialLoggedIn(generation: link, now: t0, random: 0)
        #expect(armed.timer == at(540))
        #expect(driver.machine.credentialTimerFired(now: at(539)).refresh == nil)
        let due = driver.machine.credentialTimerFired(now: at(540))
        #expect(due.refresh?.generation == link && due.refresh?.expiresAt == at(600))
        #expect(due.timer == at(600), "the expiry stays armed while the refresh runs")
        let attempt = due.refresh?.attempt ?? 0
        let retry = driver.machine.credentialRefreshFailed(generation: link, attempt: attempt, now: at(541), random: 0)
        #expect(retry.timer == at(542), "after the backoff's first step")
        #expect(!retry.contains { if case .close = $0 { true } else { false } }, "the link stays")
        let renewed = driver.machine.credentialTimerFired(now: at(542))
        let next = renewed.refresh?.attempt ?? 0
        #expect(next > attempt)
        let done = driver.machine.credentialRefreshed(
            generation: link, attempt: next, expiresAt: at(1_200), now: at(543), random: 0)
        #expect(done.timer == at(1_140))
    }

    @Test func theExpiryClosesTheLinkWithAMarkedErrorOnce() {
        var driver = driver()
        let link = driver.connect()
        driver.machine.credentialForLogin(generation: link, expiresAt: at(30))
        _ = driver.machine.credentialLoggedIn(generation: link, now: t0, random: 0)
        _ = driver.machine.credentialTimerFired(now: at(15))
        let expired = driver.machine.credentialTimerFired(now: at(30))
        let closes = expired.compactMap { action -> LongLinkError? in
            if case .close(link, .immediately, let error) = action { error } else { nil }
        }
        #expect(closes.count == 1)
        #expect(closes.first.map { DisconnectCause(.closed($0)) } == .credentialExpired)
        #expect(expired.contains { if case .cancel(.credential) = $0 { true } else { false } })
        // A refresh answered after the expiry starts nothing.
        let late = driver.machine.credentialRefreshFailed(generation: link, attempt: 1, now: at(31), random: 0)
        #expect(late.timer == nil)
    }

    @Test func theLinksEndDisarmsTheTimerAndForgetsTheLoginUnderWay() {
        var driver = driver()
        let link = driver.connect()
        driver.machine.credentialForLogin(generation: link, expiresAt: at(600))
        _ = driver.machine.credentialLoggedIn(generation: link, now: t0, random: 0)
        let ended = driver.machine.credentialLinkEnded()
        #expect(ended.contains { if case .cancel(.credential) = $0 { true } else { false } })
        // A login asked for on a link that ended before it succeeded starts no chain (the inputs
        // name links by generation: no socket is needed).
        let next = link + 1
        driver.machine.credentialForLogin(generation: next, expiresAt: at(600))
        _ = driver.machine.credentialLinkEnded()
        #expect(driver.machine.credentialLoggedIn(generation: next, now: t0, random: 0).isEmpty)
        // A credential that does not expire schedules nothing.
        let third = link + 2
        driver.machine.credentialForLogin(generation: third, expiresAt: nil)
        #expect(driver.machine.credentialLoggedIn(generation: third, now: t0, random: 0).timer == nil)
    }

    @Test func withoutCredentialsNothingIsScheduled() {
        var driver = MachineDriver()
        let link = driver.connect()
        driver.machine.credentialForLogin(generation: link, expiresAt: at(600))
        #expect(driver.machine.credentialLoggedIn(generation: link, now: t0, random: 0).isEmpty)
        #expect(driver.machine.credentialLinkEnded().isEmpty)
    }
}

extension [MachineDriver.Machine.Action] {
    /// When these actions arm the credential timer, if they do.
    fileprivate var timer: ContinuousClock.Instant? {
        for case .schedule(.credential, let instant) in self { return instant }
        return nil
    }

    /// The refresh these actions start, if they do.
    fileprivate var refresh: (generation: UInt64, attempt: UInt64, expiresAt: ContinuousClock.Instant)? {
        for case .refreshCredential(let generation, let attempt, let expiresAt) in self {
            return (generation, attempt, expiresAt)
        }
        return nil
    }
}
