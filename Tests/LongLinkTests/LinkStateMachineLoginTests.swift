import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// What a login makes safe to resend, driven directly: a server de-duplicates only requests made
/// after a login (it binds a principal there), so a link's end resends a written request as a copy
/// only when that link logged in, whatever window its server announced.
@Suite("Link state machine: resends before and after a login", .sharedMachine)
struct LinkStateMachineLoginTests {
    private let cut = LongLinkError(code: .connectionLost, message: "cut")

    /// A machine whose link `generation` opened its gate, with a login step or without one.
    private func opened(_ generation: UInt64, loggedIn: Bool, on machine: inout LinkStateMachine) {
        _ = machine.attach(generation)
        #expect(machine.receivedWelcome(generation, version: Frame.protocolVersion) == .completeHandshake)
        #expect(machine.loginSucceeded(generation, loggedIn: loggedIn) == .sync(openQueue: true))
    }

    /// Settles link `generation`'s end as the core does: the machine says whether the link logged
    /// in, and the server announced a window.
    private func settle(
        _ book: inout RequestBook<Int>, _ generation: UInt64, _ machine: inout LinkStateMachine
    ) -> (loggedIn: Bool?, resent: Int, failed: [Int]) {
        let closed = machine.closed(generation, error: cut)
        let settlement = book.linkEnded(
            generation, resendAllowed: closed?.resendAllowed ?? false, serverWindow: true,
            loggedIn: closed?.loggedIn ?? false)
        return (closed?.loggedIn, settlement.resent, settlement.failed.map(\.caller).sorted())
    }

    @Test func aCallWrittenWithoutALoginFailsAndOneWrittenAfterALoginIsResent() {
        var machine = LinkStateMachine()
        var book = RequestBook<Int>(queueLimit: 8)
        // Link 1: the session has no login step. A plain call and an idempotent one are written.
        opened(1, loggedIn: false, on: &machine)
        _ = book.admit(testCall(1), caller: 1, route: machine.route(bypassesGate: false, generation: 0))
        _ = book.admit(
            testCall(2, idempotent: true), caller: 2, route: machine.route(bypassesGate: false, generation: 0))
        let first = settle(&book, 1, &machine)
        // The server has a window, but ran call 1 as a new request: a copy would run it again.
        #expect(first.loggedIn == false)
        #expect(first.failed == [1], "a call written before any login was resent as if de-duplicated")
        #expect(first.resent == 1)  // the caller's own opt-in still holds
        // Made while no link is up: queued, never written, so it goes whatever the link was.
        _ = book.admit(testCall(3), caller: 3, route: machine.route(bypassesGate: false, generation: 0))
        // Link 2 logs in: the idempotent copy, then the queued call, go out on it.
        opened(2, loggedIn: true, on: &machine)
        let copy = book.dequeue(writingOn: 2)
        #expect(copy?.request.id == 2 && copy?.resent == true)
        let queued = book.dequeue(writingOn: 2)
        #expect(queued?.request.id == 3 && queued?.resent == false)
        let second = settle(&book, 2, &machine)
        // Written after the login: the server answers a copy from its window.
        #expect(second.loggedIn == true && second.failed.isEmpty && second.resent == 2)
        #expect(book.queuedCount == 2)
    }

    @Test func withoutAWindowALoginResendsOnlyIdempotentCalls() {
        var machine = LinkStateMachine()
        var book = RequestBook<Int>(queueLimit: 8)
        opened(1, loggedIn: true, on: &machine)
        _ = book.admit(testCall(1), caller: 1, route: machine.route(bypassesGate: false, generation: 0))
        _ = book.admit(
            testCall(2, idempotent: true), caller: 2, route: machine.route(bypassesGate: false, generation: 0))
        let closed = machine.closed(1, error: cut)
        let settlement = book.linkEnded(
            1, resendAllowed: true, serverWindow: false, loggedIn: closed?.loggedIn ?? false)
        #expect(closed?.loggedIn == true)
        #expect(settlement.failed.map(\.caller) == [1] && settlement.resent == 1)
    }

    /// A migration keeps each link's own answer: the retiring link logged in as it was current, the
    /// successor only once its gate opens (before that it carried login requests alone); a link
    /// forgets it when it closes, so a later link of another session starts without.
    @Test func eachLinkKeepsWhetherItLoggedInUntilItCloses() {
        var machine = LinkStateMachine()
        opened(1, loggedIn: true, on: &machine)
        _ = machine.attachSuccessor(2)
        #expect(machine.closed(2, error: cut)?.loggedIn == false)
        _ = machine.attachSuccessor(3)
        #expect(machine.completeMigration(3) == .takeOver(retired: 1))
        #expect(machine.loginSucceeded(3, loggedIn: true) == .sync(openQueue: true))
        let retired = machine.closed(1, error: cut)
        #expect(retired?.role == .retiring && retired?.loggedIn == true)
        #expect(machine.closed(3, error: cut)?.loggedIn == true)
        #expect(machine.loggedIn.isEmpty)
        opened(4, loggedIn: false, on: &machine)
        #expect(machine.closed(4, error: cut)?.loggedIn == false)
    }

    /// The gate opens once: a second success on the same link (open, or synced while shutting
    /// down) sends no second `Sync`, and still records that the link logged in.
    @Test func aSecondLoginSuccessOnTheSameLinkSyncsNothing() {
        var machine = LinkStateMachine()
        opened(1, loggedIn: false, on: &machine)
        #expect(machine.loginSucceeded(1, loggedIn: true) == LinkStateMachine.LoginAction.none)
        #expect(machine.phase == .open(1))
        #expect(machine.closed(1, error: cut)?.loggedIn == true)

        _ = machine.attach(2)
        #expect(machine.receivedWelcome(2, version: Frame.protocolVersion) == .completeHandshake)
        _ = machine.beginShutdown()
        #expect(machine.loginSucceeded(2, loggedIn: true) == .sync(openQueue: false))
        #expect(machine.loginSucceeded(2, loggedIn: true) == LinkStateMachine.LoginAction.none)
    }
}
