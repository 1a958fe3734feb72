import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// Whether a link's next frame may still be its first: the machine's to say, from the link's
/// state, so that the core keeps no second record of it.
@Suite("Link state machine: the first frame", .sharedMachine)
struct LinkStateMachineWelcomeTests {
    @Test func aLinkAwaitsItsWelcomeUntilItComesAndAfterAGoAwayInItsPlace() {
        var machine = LinkStateMachine()
        _ = machine.attach(1)
        #expect(machine.awaitsWelcome(1))
        // A GoAway instead of a Welcome: the link closes, and what follows is still not welcomed.
        _ = machine.receivedGoAway(1, Frame.GoAway(reconnect: true), hasWrittenRequests: false)
        #expect(machine.phase == .closing(1) && machine.awaitsWelcome(1))
        _ = machine.closed(1, error: nil)
        _ = machine.attach(2)
        let welcomed = machine.receivedWelcome(2, version: Frame.protocolVersion)
        #expect(welcomed == .completeHandshake && !machine.awaitsWelcome(2))
        // Closed by the client after its Welcome: its frames are no first frames.
        let closing = machine.closeRequested(2)
        #expect(closing && !machine.awaitsWelcome(2))
        _ = machine.closed(2, error: nil)
        _ = machine.attach(3)
        let early = machine.closeRequested(3)
        #expect(early && machine.awaitsWelcome(3))
    }

    @Test func aSuccessorIsHandedOverWelcomed() {
        var machine = LinkStateMachine()
        _ = machine.attach(1)
        _ = machine.receivedWelcome(1, version: Frame.protocolVersion)
        _ = machine.loginSucceeded(1, loggedIn: true)
        _ = machine.attachSuccessor(2)
        #expect(!machine.awaitsWelcome(2) && !machine.awaitsWelcome(1))
        _ = machine.completeShutdown()
        #expect(!machine.awaitsWelcome(1), "a shutdown's close keeps the link welcomed")
    }
}

/// The heartbeat of each link, kept with its state.
@Suite("Link state machine: the heartbeat", .sharedMachine)
struct LinkStateMachineHeartbeatTests {
    /// Ticks `count` times with nothing received or sent; the actions.
    private func quiet(_ count: Int, _ generation: UInt64, _ machine: inout LinkStateMachine)
        -> [HeartbeatMonitor.TickAction?]
    {
        (0..<count).map { _ in machine.heartbeatTick(generation, received: false, sent: false) }
    }

    @Test func aQuietLinkIsPingedOnceWelcomedAndDeclaredDeadAfterTwoIntervals() {
        var machine = LinkStateMachine()
        _ = machine.attach(1)
        let interval = HeartbeatMonitor.ticksPerInterval
        // Before its Welcome no Ping goes out (the handshake has its own timeout).
        #expect(quiet(interval, 1, &machine).allSatisfy { $0 == HeartbeatMonitor.TickAction.none })
        _ = machine.receivedWelcome(1, version: Frame.protocolVersion)
        // Welcomed, after an interval of silence: a Ping at each tick, nothing having been sent.
        #expect(quiet(interval - 1, 1, &machine) == Array(repeating: .sendPing, count: interval - 1))
        // Nothing heard for two intervals since the link came up: dead.
        #expect(machine.heartbeatTick(1, received: false, sent: true) == .declareDead)
        // A link that is not the current one (a migration's successor) has no heartbeat ticked.
        _ = machine.attachSuccessor(2)
        #expect(machine.heartbeatTick(2, received: false, sent: false) == nil)
    }

    @Test func eachLinkHasAHeartbeatOfItsOwn() {
        var machine = LinkStateMachine()
        _ = machine.attach(1)
        _ = machine.receivedWelcome(1, version: Frame.protocolVersion)
        _ = quiet(HeartbeatMonitor.ticksPerInterval, 1, &machine)
        _ = machine.closed(1, error: nil)
        _ = machine.attach(2)
        _ = machine.receivedWelcome(2, version: Frame.protocolVersion)
        let fresh = quiet(HeartbeatMonitor.ticksPerInterval - 1, 2, &machine)
        #expect(fresh.allSatisfy { $0 == HeartbeatMonitor.TickAction.none }, "the new link starts quiet-free")
    }
}
