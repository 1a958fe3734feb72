import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLink

/// The client's one machine deciding liveness: the heartbeat's ticks (nothing, a `Ping`, or the
/// link is dead) and the liveness probe, with their timers asked for by id. No clock: each tick and
/// each timeout is an event of the test.
@Suite("Client state machine: liveness", .sharedMachine)
struct ClientStateMachineLivenessTests {
    typealias Machine = MachineDriver.Machine
    private let now = ContinuousClock.now
    private let interval = Duration.milliseconds(250)

    @Test func aSilentLinkIsPingedThenDeclaredDeadAfterTwoIntervalsAndAReadKeepsItAlive() {
        var driver = MachineDriver()
        let link = driver.connect()
        var actions: [Machine.Action] = []
        // One tick short of two intervals of silence: Pings, each with the next tick.
        for _ in 1..<(2 * HeartbeatMonitor.ticksPerInterval) {
            actions = driver.machine.heartbeatTicked(link, now: now, interval: interval)
            #expect(actions.nextTick(of: link) == now + interval)
        }
        #expect(actions.contains { if case .sendPing(link) = $0 { true } else { false } })
        // Something arrives: the count starts again.
        driver.machine.read(on: link)
        actions = driver.machine.heartbeatTicked(link, now: now, interval: interval)
        #expect(!actions.isDead(link))
        for _ in 1..<(2 * HeartbeatMonitor.ticksPerInterval) {
            #expect(!driver.machine.heartbeatTicked(link, now: now, interval: interval).isDead(link))
        }
        actions = driver.machine.heartbeatTicked(link, now: now, interval: interval)
        #expect(actions.isDead(link) && actions.nextTick(of: link) == nil)
        #expect(actions.contains { if case .close(link, .immediately, .some(let error)) = $0 { error.code == .connectionLost } else { false } })
        #expect(driver.machine.stats.deadLinks == 1)
        // Closing already: counted again, not closed twice.
        let again = driver.machine.heartbeatTicked(link, now: now, interval: interval)
        #expect(!again.contains { if case .close = $0 { true } else { false } })
    }

    @Test func aProbeRunsOnceAtATimeAndOnlyItsSilenceKillsTheLink() {
        var driver = MachineDriver()
        let link = driver.connect()
        let probe = driver.machine.probeLiveness(link, now: now, timeout: .seconds(2))
        #expect(probe.count == 2)
        #expect(probe.contains { if case .sendPing(link) = $0 { true } else { false } })
        #expect(probe.contains { if case .schedule(.probe(link), now + .seconds(2)) = $0 { true } else { false } })
        #expect(driver.machine.probeLiveness(link, now: now, timeout: .seconds(2)).isEmpty, "one probe at a time")
        // Answered: the link lives, and the next probe may run.
        driver.machine.read(on: link)
        #expect(driver.machine.probeTimedOut(link, ended: false).isEmpty)
        _ = driver.machine.probeLiveness(link, now: now, timeout: .seconds(2))
        #expect(driver.machine.probeTimedOut(link, ended: true).isEmpty, "the link ended meanwhile")
        _ = driver.machine.probeLiveness(link, now: now, timeout: .seconds(2))
        let silent = driver.machine.probeTimedOut(link, ended: false)
        #expect(silent.isDead(link) && driver.machine.stats.deadLinks == 1)
    }

    @Test func aLinkThatClosesForgetsItsActivityAndStopsItsTimers() {
        var driver = MachineDriver()
        let link = driver.connect()
        driver.machine.read(on: link)
        #expect(driver.machine.activity[link] != nil)
        _ = driver.closed(link)
        #expect(driver.machine.activity[link] == nil)
        let stop = driver.machine.stopLiveness(link)
        #expect(stop.count == 3)
        #expect(stop.contains { if case .cancel(.answer(link)) = $0 { true } else { false } })
        #expect(stop.contains { if case .cancel(.tick(link)) = $0 { true } else { false } })
        #expect(stop.contains { if case .cancel(.probe(link)) = $0 { true } else { false } })
    }
}

extension [MachineDriver.Machine.Action] {
    func isDead(_ generation: UInt64) -> Bool {
        contains { if case .linkDead(generation, _) = $0 { true } else { false } }
    }

    func nextTick(of generation: UInt64) -> ContinuousClock.Instant? {
        for case .schedule(.tick(generation), let at) in self { return at }
        return nil
    }
}

/// The app's lifecycle and network events, decided by the machine: the supervisor's waits end or
/// the wake is kept for its next wait.
@Suite("Client state machine: supervision", .sharedMachine)
struct ClientStateMachineSupervisionTests {
    @Test func aNetworkChangeWakesAWaitingReconnectionOrIsKeptForTheNextWait() {
        var driver = MachineDriver()
        let waking = driver.machine.networkChanged(retryWaiting: true)
        #expect(waking.wakesRetry == [.networkChanged] && waking.probes)
        #expect(driver.machine.supervision.pendingWake == nil)
        let kept = driver.machine.networkChanged(retryWaiting: false)
        #expect(kept.wakesRetry.isEmpty && driver.machine.supervision.pendingWake == .networkChanged)
        #expect(driver.machine.supervision.changes.network == 2)
        // Connected: the supervisor's wait on the link ends to re-probe.
        let link = driver.connect()
        #expect(driver.machine.networkChanged(retryWaiting: false).reprobes(link))
        // A timer's wake is for the wait it was armed for only.
        driver.machine.supervision.pendingWake = nil
        #expect(driver.machine.wakeRetry(.timer, retryWaiting: false).isEmpty)
        #expect(driver.machine.supervision.pendingWake == nil)
    }

    @Test func comingBackToTheForegroundWakesAndProbesOnceAndGoingAwayDoesNeither() {
        var driver = MachineDriver()
        #expect(driver.machine.setBackground(true, retryWaiting: true).isEmpty)
        #expect(driver.machine.supervision.inBackground)
        #expect(driver.machine.setBackground(true, retryWaiting: true).isEmpty, "there already")
        let back = driver.machine.setBackground(false, retryWaiting: true)
        #expect(back.wakesRetry == [.networkChanged] && back.probes)
        #expect(driver.machine.setBackground(false, retryWaiting: true).isEmpty)
    }

    @Test func aNewEndpointListReprobesOnTheLiveLinkElseBeforeTheNextReconnection() {
        var driver = MachineDriver()
        let link = driver.connect()
        let live = driver.machine.endpointsChanged(liveLink: link, retryWaiting: true)
        #expect(live.reprobes(link) && live.wakesRetry.isEmpty)
        let none = driver.machine.endpointsChanged(liveLink: nil, retryWaiting: true)
        #expect(none.wakesRetry == [.networkChanged])
        #expect(driver.machine.supervision.changes.list == 2)
    }
}

extension [MachineDriver.Machine.Action] {
    var wakesRetry: [RetryWake] {
        var wakes: [RetryWake] = []
        for case .wakeRetry(let wake) in self { wakes.append(wake) }
        return wakes
    }

    var probes: Bool {
        contains { if case .probeLiveness = $0 { true } else { false } }
    }

    func reprobes(_ generation: UInt64) -> Bool {
        contains { if case .wakeSupervisor(generation, .reprobe) = $0 { true } else { false } }
    }
}
