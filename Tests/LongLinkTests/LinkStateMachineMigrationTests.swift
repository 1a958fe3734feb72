import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// The connection machine's successor and retiring links, and every close path handing back every
/// pending call: no socket, no event loop, no clock.
@Suite("Link state machine: migration and close paths", .sharedMachine)
struct LinkStateMachineMigrationTests {
    private func loggedIn(_ generation: UInt64 = 1) -> LinkStateMachine {
        var machine = LinkStateMachine()
        _ = machine.attach(generation)
        _ = machine.receivedWelcome(generation, version: Frame.protocolVersion)
        _ = machine.loginSucceeded(generation, loggedIn: true)
        return machine
    }

    @Test func aSuccessorLogsInBesideTheCurrentLinkThenTakesOverAndTheOldOneRetires() {
        var machine = loggedIn(1)
        #expect(machine.attachSuccessor(2).replaced == .some(nil))
        #expect(machine.role(of: 1) == .current && machine.role(of: 2) == .successor)
        // Its login goes on it; everything else still on the current link.
        #expect(machine.route(bypassesGate: true, generation: 2).generation == 2)
        #expect(machine.route(bypassesGate: false, generation: 0).generation == 1)
        #expect(machine.completeMigration(2) == .takeOver(retired: 1))
        #expect(machine.role(of: 2) == .current && machine.role(of: 1) == .retiring)
        #expect(machine.latest == 2)
        #expect(machine.loginSucceeded(2, loggedIn: true) == .sync(openQueue: true))
        #expect(machine.route(bypassesGate: false, generation: 0).generation == 2)
        // The retiring link is told GoAway once, when drained.
        let drained = machine.retiredLinkDrained(1)
        let again = machine.retiredLinkDrained(1)
        #expect(drained && !again)
        #expect(machine.sideLinks.isEmpty)
        #expect(machine.closed(1, error: nil)?.role == .retiring)
        #expect(machine.role(of: 1) == nil)
        #expect(machine.phase == .open(2))
    }

    @Test func aNewSuccessorReplacesTheOldOneAndAStaleTakeOverIsAbandoned() {
        var machine = loggedIn(1)
        #expect(machine.attachSuccessor(2).replaced == .some(nil))
        #expect(machine.attachSuccessor(3).replaced == 2)
        #expect(machine.completeMigration(2) == .abandon)
        #expect(machine.role(of: 3) == .successor)
        _ = machine.beginShutdown()
        #expect(machine.completeMigration(3) == .abandon)
        #expect(machine.role(of: 1) == .current)
        #expect(machine.attachSuccessor(4).replaced == nil)
    }

    @Test func aGoAwayOnASideLinkLeavesOrWaitsAndNeverTouchesTheCurrentLink() {
        var machine = loggedIn(1)
        _ = machine.attachSuccessor(2)
        guard case .close = machine.receivedGoAway(2, Frame.GoAway(), hasWrittenRequests: false),
            case .waitForReplies = machine.receivedGoAway(2, Frame.GoAway(), hasWrittenRequests: true)
        else {
            Issue.record("expected the successor to close, or to wait for its replies")
            return
        }
        #expect(machine.phase == .open(1) && machine.goAway == nil)
    }

    // MARK: Every close path hands back every pending call

    /// A book with one queued request (1) and, on `link`, a written request that may not go again
    /// (2) and an idempotent one that may (3).
    private func book(writtenOn link: UInt64) -> RequestBook<Int> {
        var book = RequestBook<Int>(queueLimit: 8)
        _ = book.admit(testCall(1), caller: 1, route: .queue)
        _ = book.admit(testCall(2), caller: 2, route: .write(generation: link))
        _ = book.admit(testCall(3, idempotent: true), caller: 3, route: .write(generation: link))
        return book
    }

    /// Settles what was written on `link` as the core does when it closes: every written call is
    /// either resent or handed back to be failed, and none is left on the link.
    private func settle(
        _ book: inout RequestBook<Int>, _ link: UInt64, _ closed: LinkStateMachine.ClosedAction?
    ) -> (resent: Int, failed: [UInt64]) {
        let settlement = book.linkEnded(
            link, resendAllowed: closed?.resendAllowed ?? false, serverWindow: false, loggedIn: true)
        #expect(!book.hasWritten(on: link))
        #expect(settlement.resent + settlement.failed.count == 2)
        return (settlement.resent, settlement.failed.map(\.request.id).sorted())
    }

    @Test func aShutdownWhileConnectingHandsBackTheQueueAndRefusesTheLink() {
        var machine = LinkStateMachine()
        var book = RequestBook<Int>(queueLimit: 8)
        _ = book.admit(testCall(1), caller: 1, route: machine.route(bypassesGate: false, generation: 0))
        #expect(machine.beginShutdown() == .failUnwrittenAndWait)
        #expect(book.removeUnwritten().map(\.request.id) == [1])
        #expect(book.isEmpty)
        guard case .refuse(let error) = machine.attach(1) else {
            Issue.record("expected the link to be refused")
            return
        }
        #expect(error.code == .shutdown)
        #expect(machine.completeShutdown() == .none)
    }

    @Test func aCloseWhileHandshakingKeepsTheQueueForTheNextLink() {
        var machine = LinkStateMachine()
        _ = machine.attach(1)
        var book = RequestBook<Int>(queueLimit: 8)
        _ = book.admit(testCall(1), caller: 1, route: machine.route(bypassesGate: false, generation: 0))
        let closed = machine.closed(1, error: LongLinkError(code: .connectionLost, message: "reset"))
        guard case .closed(let error) = closed?.end else {
            Issue.record("expected a closed end")
            return
        }
        #expect(error?.code == .connectionLost && closed?.role == .current && closed?.resendAllowed == true)
        #expect(book.linkEnded(1, resendAllowed: true, serverWindow: false, loggedIn: true).failed.isEmpty)
        #expect(book.queuedCount == 1)
        #expect(machine.phase == .idle)
    }

    @Test func aCloseWhileActiveResendsWhatMayGoAgainAndFailsTheRest() {
        var machine = loggedIn(1)
        var book = book(writtenOn: 1)
        let settled = settle(&book, 1, machine.closed(1, error: nil))
        #expect(settled.resent == 1 && settled.failed == [2])
        #expect(book.queuedCount == 2)
    }

    @Test func aCloseWhileMigratingHandsBackTheSuccessorsLoginAndKeepsTheCurrentLink() {
        var machine = loggedIn(1)
        _ = machine.attachSuccessor(2)
        var book = book(writtenOn: 1)
        _ = book.admit(testCall(4, login: 2), caller: 4, route: machine.route(bypassesGate: true, generation: 2))
        let closed = machine.closed(2, error: nil)
        #expect(closed?.role == .successor && closed?.resendAllowed == true)
        // A login request never goes again: its link is gone.
        #expect(
            book.linkEnded(2, resendAllowed: true, serverWindow: true, loggedIn: true).failed.map(\.request.id) == [4])
        #expect(machine.role(of: 2) == nil && machine.phase == .open(1))
        #expect(book.hasWritten(on: 1))
        // The current link closes next: its calls are handed back too.
        let settled = settle(&book, 1, machine.closed(1, error: nil))
        #expect(settled.resent == 1 && settled.failed == [2])
    }

    /// A server that says `GoAway` and closes at once, while the successor still logs in: the
    /// successor takes over and nothing is retired, so no closed link lingers as retiring.
    @Test func aMigrationCompletedAfterTheCurrentLinkClosedRetiresNothing() {
        var machine = loggedIn(1)
        _ = machine.receivedGoAway(1, Frame.GoAway(reason: "draining", reconnect: true), hasWrittenRequests: false)
        _ = machine.attachSuccessor(2)
        #expect(machine.closed(1, error: nil)?.role == .current)
        #expect(machine.completeMigration(2) == .takeOver(retired: nil))
        #expect(machine.role(of: 1) == nil && machine.sideLinks.isEmpty)
        #expect(machine.loginSucceeded(2, loggedIn: true) == .sync(openQueue: true) && machine.phase == .open(2))
    }

    @Test func aCloseWhileDrainingEndsAsGoAwayAndHandsBackItsCalls() {
        var machine = loggedIn(1)
        var book = book(writtenOn: 1)
        _ = machine.receivedGoAway(1, Frame.GoAway(reason: "leaving", reconnect: true), hasWrittenRequests: true)
        #expect(machine.phase == .draining(1))
        let closed = machine.closed(1, error: nil)
        guard case .goAway = closed?.end else {
            Issue.record("expected a GoAway end")
            return
        }
        let settled = settle(&book, 1, closed)
        #expect(settled.resent == 1 && settled.failed == [2])
    }

    @Test func aRetiringLinkThatClosesHandsBackWhatWasWrittenOnIt() {
        var machine = loggedIn(1)
        var book = book(writtenOn: 1)
        _ = machine.attachSuccessor(2)
        _ = machine.completeMigration(2)
        _ = machine.loginSucceeded(2, loggedIn: true)
        let closed = machine.closed(1, error: LongLinkError(code: .connectionLost, message: "reset"))
        #expect(closed?.role == .retiring)
        let settled = settle(&book, 1, closed)
        #expect(settled.resent == 1 && settled.failed == [2])
        #expect(machine.phase == .open(2))
    }

    @Test func aCloseAfterShutdownHandsBackEveryWrittenCallToBeFailed() {
        var machine = loggedIn(1)
        _ = machine.attachSuccessor(2)
        var book = book(writtenOn: 1)
        _ = machine.beginShutdown()
        #expect(machine.sideLinks == [2])
        #expect(machine.completeShutdown() == .sayGoAwayAndClose(flushAcks: true))
        let settled = settle(&book, 1, machine.closed(1, error: nil))
        #expect(settled.resent == 0 && settled.failed == [2, 3])
        #expect(machine.closed(2, error: nil)?.resendAllowed == false)
    }
}

extension LinkStateMachine.SuccessorAction {
    /// For a login: the successor it replaces (`.some(nil)`: none); nil for a refusal.
    fileprivate var replaced: UInt64?? {
        if case .login(let replacing) = self { return .some(replacing) }
        return nil
    }
}

extension RequestRoute {
    /// The generation a request goes out on, if it goes out now.
    fileprivate var generation: UInt64? {
        if case .write(let generation) = self { return generation }
        return nil
    }
}
