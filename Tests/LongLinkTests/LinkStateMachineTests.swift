import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// The link lifecycle and the request book, driven directly: no socket, no event loop, no clock.
@Suite("Link state machine", .sharedMachine)
struct LinkStateMachineTests {
    /// A machine whose link `generation` has logged in.
    private func loggedIn(_ generation: UInt64 = 1) -> LinkStateMachine {
        var machine = LinkStateMachine()
        #expect(machine.attach(generation).isAwaitWelcome)
        #expect(machine.receivedWelcome(generation, version: Frame.protocolVersion) == .completeHandshake)
        #expect(machine.loginSucceeded(generation, loggedIn: true) == .sync(openQueue: true))
        return machine
    }

    @Test func theQueueWaitsForTheLoginAndLoginRequestsGoOnlyOnTheirLink() {
        var machine = LinkStateMachine()
        #expect(machine.route(bypassesGate: false, generation: 0).isQueue)
        #expect(machine.attach(1).isAwaitWelcome)
        #expect(machine.phase == .handshaking(1))
        // Before Welcome, not even the login step may write.
        #expect(machine.route(bypassesGate: true, generation: 1).isRefusal)
        #expect(machine.receivedWelcome(1, version: Frame.protocolVersion) == .completeHandshake)
        #expect(machine.route(bypassesGate: true, generation: 1).writes(on: 1))
        #expect(machine.route(bypassesGate: true, generation: 2).isRefusal)
        #expect(machine.route(bypassesGate: false, generation: 0).isQueue)
        #expect(machine.loginSucceeded(1, loggedIn: true) == .sync(openQueue: true))
        #expect(machine.synced)
        #expect(machine.route(bypassesGate: false, generation: 0).writes(on: 1))
    }

    @Test func aWelcomeOfAnotherVersionOrALinkIsNotAHandshake() {
        var machine = LinkStateMachine()
        _ = machine.attach(3)
        #expect(machine.receivedWelcome(2, version: Frame.protocolVersion) == .none)
        guard case .violation = machine.receivedWelcome(3, version: Frame.protocolVersion + 1) else {
            Issue.record("expected a violation")
            return
        }
        #expect(machine.phase == .handshaking(3))
    }

    @Test func goAwayDrainsWrittenRequestsThenTheLinkEndsAsGoAway() {
        var machine = loggedIn()
        let goAway = Frame.GoAway(code: .unavailable, reason: "draining", reconnect: true)
        guard case .waitForReplies = machine.receivedGoAway(1, goAway, hasWrittenRequests: true) else {
            Issue.record("expected to wait for replies")
            return
        }
        #expect(machine.phase == .draining(1))
        // Nothing new goes out on a draining link.
        #expect(machine.route(bypassesGate: false, generation: 0).isQueue)
        guard let closed = machine.closed(1, error: nil), case .goAway(let frame) = closed.end else {
            Issue.record("expected a GoAway end")
            return
        }
        #expect(frame.reason == "draining")
        #expect(closed.resendAllowed)
        #expect(machine.phase == .idle)
    }

    @Test func aDrainingLinkIsClosedByTheClientOnceItsLastWrittenRequestEnds() {
        var machine = loggedIn()
        let notDraining = machine.drained(1)
        _ = machine.receivedGoAway(1, Frame.GoAway(reason: "draining", reconnect: true), hasWrittenRequests: true)
        let otherGeneration = machine.drained(2)
        let drained = machine.drained(1)
        let again = machine.drained(1)
        #expect(!notDraining && !otherGeneration && drained && !again)
        #expect(machine.phase == .closing(1))
        guard let closed = machine.closed(1, error: nil), case .goAway = closed.end else {
            Issue.record("expected the link to end as GoAway")
            return
        }
    }

    @Test func goAwayWithNothingWrittenClosesAndDuringTheHandshakeFailsIt() {
        var machine = loggedIn()
        guard case .close = machine.receivedGoAway(1, Frame.GoAway(reason: "bye"), hasWrittenRequests: false) else {
            Issue.record("expected close")
            return
        }
        #expect(machine.phase == .closing(1))
        let r1 = machine.closeRequested(1)  // closing already
        #expect(!r1)
        var handshaking = LinkStateMachine()
        _ = handshaking.attach(1)
        guard
            case .failHandshakeAndClose(let error) = handshaking.receivedGoAway(
                1, Frame.GoAway(), hasWrittenRequests: false)
        else {
            Issue.record("expected the handshake to fail")
            return
        }
        #expect(error.code == .goAway)
    }

    @Test func lateEventsOfAnOldLinkChangeNothing() {
        var machine = loggedIn(2)
        let closed = machine.closed(1, error: nil)
        #expect(closed == nil)
        let closing = machine.closeRequested(1)
        #expect(!closing)
        let login = machine.loginSucceeded(1, loggedIn: true)
        #expect(login == .none)
        guard case .none = machine.receivedGoAway(1, Frame.GoAway(), hasWrittenRequests: false) else {
            Issue.record("an old link's GoAway acted")
            return
        }
        #expect(machine.phase == .open(2))
    }

    @Test func shutdownRefusesNewRequestsAndSaysGoAwayOnce() {
        var machine = loggedIn()
        #expect(machine.beginShutdown() == .failUnwrittenAndWait)
        #expect(machine.beginShutdown() == .none)
        #expect(machine.admissionError?.code == .shutdown)
        #expect(machine.completeShutdown() == .sayGoAwayAndClose(flushAcks: true))
        #expect(machine.completeShutdown() == .none)
        guard let closed = machine.closed(1, error: nil), case .shutdown = closed.end else {
            Issue.record("expected a shutdown end")
            return
        }
        #expect(!closed.resendAllowed)
        #expect(machine.attach(2).refusal?.code == .shutdown)
    }

    @Test func aTerminalErrorIsRecordedOnceAndRefusesEverything() {
        var machine = loggedIn()
        let r2 = machine.terminate(LongLinkError(code: .unauthenticated, message: "no"))
        #expect(r2)
        let r3 = machine.terminate(LongLinkError(code: .goAway, message: "later"))
        #expect(!r3)
        #expect(machine.admissionError?.code == .unauthenticated)
        #expect(machine.attach(2).refusal?.code == .unauthenticated)
        #expect(machine.closed(1, error: nil)?.resendAllowed == false)
    }

    // MARK: Every close path hands back every pending request

    /// A book with requests 1...4 written on link 1 (2 idempotent, 4 a login request) and 5, 6 queued.
    private func book(on machine: LinkStateMachine) -> RequestBook<Int> {
        var book = RequestBook<Int>(queueLimit: 10)
        for (id, idempotent) in [(1, false), (2, true), (3, false)] as [(UInt64, Bool)] {
            let new = testCall(id, idempotent: idempotent)
            #expect(isWrite(book.admit(new, caller: Int(id), route: machine.route(bypassesGate: false, generation: 0))))
        }
        #expect(isWrite(book.admit(testCall(4, login: 1), caller: 4, route: .write(generation: 1))))
        for id in [5, 6] as [UInt64] {
            #expect(isQueued(book.admit(testCall(id), caller: Int(id), route: .queue)))
        }
        return book
    }

    /// The queue's byte bound: a request that would pass it is refused, one always fits an empty
    /// queue, and bytes leave the count however a request leaves the queue.
    @Test func theQueueIsBoundedInBytes() {
        var book = RequestBook<Int>(queueLimit: 10, queueByteLimit: 100)
        func call(_ id: UInt64, bytes: Int) -> PendingRequest {
            PendingRequest(
                id: id, method: "m", payload: [UInt8](repeating: 0, count: bytes), deadline: .now, idempotent: true)
        }
        #expect(isQueued(book.admit(call(1, bytes: 60), caller: 1, route: .queue)))
        #expect(!isQueued(book.admit(call(2, bytes: 60), caller: 2, route: .queue)))
        #expect(isQueued(book.admit(call(3, bytes: 40), caller: 3, route: .queue)))
        #expect(book.queuedBytes == 100)
        _ = book.remove(1)
        #expect(book.dequeue(writingOn: 1)?.request.id == 3)
        #expect(book.queuedBytes == 0)
        #expect(isQueued(book.admit(call(4, bytes: 500), caller: 4, route: .queue)))  // an empty queue takes it
        // A link's end puts its written request back in the queue, bytes and all.
        _ = book.linkEnded(1, resendAllowed: true, serverWindow: true, loggedIn: true)
        #expect(book.queuedBytes == 540)
        #expect(book.removeUnwritten().count == 2 && book.queuedBytes == 0)
    }

    @Test func aDroppedLinkResendsWhatIsSafeAndHandsBackTheRest() {
        var machine = loggedIn()
        var books = book(on: machine)
        let closed = machine.closed(1, error: LongLinkError(code: .connectionLost, message: "cut"))
        #expect(closed?.resendAllowed == true)
        // Without server de-duplication: only the idempotent request goes again, ahead of the queue.
        var withoutDedupe = books
        let settled = withoutDedupe.linkEnded(1, resendAllowed: true, serverWindow: false, loggedIn: true)
        #expect(settled.failed.map(\.caller).sorted() == [1, 3, 4])
        #expect(settled.resent == 1)
        #expect(withoutDedupe.count == 3)
        #expect(withoutDedupe.dequeue(writingOn: 2)?.request.id == 2)
        #expect(withoutDedupe.dequeue(writingOn: 2)?.request.id == 5)
        // With it: everything but the login request, in the order it was made.
        let dedupe = books.linkEnded(1, resendAllowed: true, serverWindow: true, loggedIn: true)
        #expect(dedupe.failed.map(\.caller) == [4])
        #expect(dedupe.resent == 3)
        #expect((0..<5).compactMap { _ in books.dequeue(writingOn: 2)?.request.id } == [1, 2, 3, 5, 6])
    }

    @Test func aLinkEndedByShutdownOrATerminalErrorHandsBackEveryWrittenRequest() {
        var machine = loggedIn()
        var books = book(on: machine)
        _ = machine.beginShutdown()
        // The shutdown fails what is not written, at once.
        #expect(books.removeUnwritten().map(\.caller) == [5, 6])
        let closed = machine.closed(1, error: nil)
        let settled = books.linkEnded(
            1, resendAllowed: closed?.resendAllowed ?? true, serverWindow: true, loggedIn: true)
        #expect(settled.failed.map(\.caller).sorted() == [1, 2, 3, 4])
        #expect(books.isEmpty)
    }

    @Test func stoppingHandsBackEveryRequestOnceWhereverItIs() {
        let machine = loggedIn()
        var books = book(on: machine)
        #expect(books.remove(3)?.caller == 3)
        #expect(books.remove(3) == nil)
        #expect(books.remove(6)?.caller == 6)  // leaves the queue too
        #expect(books.removeAll().map(\.caller) == [1, 2, 4, 5])
        #expect(books.isEmpty && books.queuedCount == 0)
        #expect(books.dequeue(writingOn: 1) == nil)
    }

    @Test func aFullQueueRefusesWithResourceExhausted() {
        var books = RequestBook<Int>(queueLimit: 1)
        #expect(isQueued(books.admit(testCall(1), caller: 1, route: .queue)))
        guard case .refuse(let error) = books.admit(testCall(2), caller: 2, route: .queue) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.code == .resourceExhausted)
        #expect(books.count == 1)
    }

    /// A second request with a pending id is refused, never allowed to replace (and so leak) the
    /// first one's caller.
    @Test func aPendingIdIsNeverReplaced() {
        var books = RequestBook<Int>(queueLimit: 4)
        #expect(isQueued(books.admit(testCall(7), caller: 1, route: .queue)))
        guard case .refuse(let error) = books.admit(testCall(7), caller: 2, route: .write(generation: 1)) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(error.code == .failedPrecondition)
        #expect(books[7]?.caller == 1)
        #expect(books.queuedCount == 1)
    }

    private func isWrite(_ action: RequestBook<Int>.AdmitAction) -> Bool {
        if case .write = action { return true }
        return false
    }

    private func isQueued(_ action: RequestBook<Int>.AdmitAction) -> Bool {
        if case .queued = action { return true }
        return false
    }
}

extension LinkStateMachine.AttachAction {
    fileprivate var isAwaitWelcome: Bool {
        if case .awaitWelcome = self { return true }
        return false
    }

    fileprivate var refusal: LongLinkError? {
        if case .refuse(let error) = self { return error }
        return nil
    }
}

extension RequestRoute {
    fileprivate var isQueue: Bool {
        if case .queue = self { return true }
        return false
    }

    fileprivate var isRefusal: Bool {
        if case .refuse = self { return true }
        return false
    }

    fileprivate func writes(on generation: UInt64) -> Bool {
        if case .write(generation) = self { return true }
        return false
    }
}
