import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLink

/// The machine's liveness with an adaptive heartbeat: an idle tick, the heartbeat's `Ping` as a probe
/// with the answer timeout, and the watch after a request. Each tick and timeout is an event of the test.
@Suite("Client state machine: adaptive liveness", .sharedMachine)
struct ClientStateMachineAdaptiveLivenessTests {
    typealias Machine = MachineDriver.Machine
    private let now = ContinuousClock.now
    private let interval = Duration.milliseconds(250)
    private let answer = Duration.seconds(1)

    @Test func anIntervalWithNoTrafficIsIdleAndItsPingIsAProbe() {
        var driver = MachineDriver()
        let link = driver.connect()
        var actions: [Machine.Action] = []
        for tick in 1...HeartbeatMonitor.ticksPerInterval {
            #expect(!driver.machine.isIdle(link), "tick \(tick)")
            actions = driver.machine.heartbeatTicked(link, now: now, interval: interval, answerTimeout: answer)
        }
        #expect(driver.machine.isIdle(link))
        #expect(actions.contains { if case .sendPing(link) = $0 { true } else { false } })
        #expect(actions.contains { if case .schedule(.probe(link), now + answer) = $0 { true } else { false } })
        // Unanswered within the answer timeout: dead, long before two intervals of a long heartbeat.
        #expect(driver.machine.probeTimedOut(link, ended: false).contains { if case .linkDead(link, _) = $0 { true } else { false } })
        // Traffic either way ends the idleness.
        driver.machine.wrote(on: link)
        _ = driver.machine.heartbeatTicked(link, now: now, interval: interval, answerTimeout: answer)
        #expect(!driver.machine.isIdle(link))
    }

    @Test func aRequestIntoSilenceIsProbedAfterOneAnswerTimeout() {
        var driver = MachineDriver()
        let link = driver.connect()
        let watch = driver.machine.requestWritten(on: link, now: now, timeout: answer)
        #expect(watch.contains { if case .schedule(.answer(link), now + answer) = $0 { true } else { false } })
        // A second request while the watch runs is remembered, not a second timer.
        #expect(driver.machine.requestWritten(on: link, now: now, timeout: answer).isEmpty)
        // Something was read: the request written meanwhile is watched in turn.
        driver.machine.read(on: link)
        let again = driver.machine.answerTimedOut(link, now: now, timeout: answer, ended: false)
        #expect(again.contains { if case .schedule(.answer(link), _) = $0 { true } else { false } })
        // Nothing read since: a probe (a Ping, dead without an answer).
        let probe = driver.machine.answerTimedOut(link, now: now, timeout: answer, ended: false)
        #expect(probe.contains { if case .sendPing(link) = $0 { true } else { false } })
        #expect(probe.contains { if case .schedule(.probe(link), now + answer) = $0 { true } else { false } })
        // An ended link is left alone.
        _ = driver.machine.requestWritten(on: link, now: now, timeout: answer)
        #expect(driver.machine.answerTimedOut(link, now: now, timeout: answer, ended: true).isEmpty)
    }
}
