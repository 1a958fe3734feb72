import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// The client's one machine driven directly: where each request goes, and every close path handing
/// each pending call back exactly once, failed or queued again. No socket, no event loop, no clock.
@Suite("Client state machine: requests and close paths", .sharedMachine)
struct ClientStateMachineTests {
    @Test func aRequestWaitsInLineWhileOthersWaitTheServersLimitIsWrittenOrTheBufferIsFull() {
        var driver = MachineDriver()
        let link = driver.connect(maxInFlight: 2)
        #expect(driver.call().action.writtenOn == link)
        let second = driver.call().id
        let third = driver.call()
        #expect(third.action.isQueued, "the server's max_in_flight are written")
        // A reply makes room: the queue goes out in order.
        let afterReply = driver.end(1)
        #expect(afterReply.map { if case .drainQueue(link) = $0 { true } else { false } } == true)
        #expect(driver.ids(on: link) == [1, 2, third.id])
        // A full write buffer holds new requests and the queue back.
        driver.writable = false
        driver.end(second)
        #expect(driver.call().action.isQueued)
        driver.writable = true
        // Others wait in line: a new one queues behind them, though the link could take it.
        #expect(driver.call().action.isQueued)
        // A login request never waits in line.
        #expect(driver.call(login: link).action.writtenOn == link)
        driver.drain(link)
        #expect(driver.ids(on: link) == [1, 2, 3, 6], "the server's max_in_flight are written")
        driver.end(3)
        #expect(driver.ids(on: link) == [1, 2, 3, 6, 4])
    }

    @Test func eachWrittenRequestIsFailedOrQueuedAgainOnceWhenItsLinkDrops() {
        var driver = MachineDriver()
        let first = driver.connect(maxInFlight: 3)
        let unsafe = driver.call().id
        let idempotent = driver.call(idempotent: true).id
        let login = driver.call(idempotent: true, login: first).id
        let queued = driver.call().id
        #expect(driver.machine.book[queued]?.stage == .queued)
        // No de-dup window: only the idempotent call may run twice; a login call never goes again.
        let outcome = driver.closed(first)
        #expect(Set(outcome.settlement.failed.map(\.request.id)) == [unsafe, login])
        #expect(outcome.settlement.resent == 1)
        #expect(driver.waiting == [Int(idempotent), Int(queued)])
        // The next link writes the copy first, marked resent, then the queue.
        let second = driver.connect()
        #expect(driver.written[second]?.map(\.id) == [idempotent, queued])
        #expect(driver.written[second]?.map(\.resent) == [true, false])
        driver.end(idempotent)
        driver.end(queued)
        #expect(driver.waiting.isEmpty && driver.machine.book.isEmpty)
    }

    @Test func aServerWindowSparesOnlyWhatWasWrittenAfterALogin() {
        var driver = MachineDriver()
        let before = driver.connect(loggedIn: false)
        let unsafe = driver.call().id
        let outcome = driver.closed(before, serverWindow: true)
        #expect(outcome.settlement.failed.map(\.request.id) == [unsafe])
        #expect(outcome.madeBeforeLogin)
        let after = driver.connect(loggedIn: true)
        let spared = driver.call().id
        let second = driver.closed(after, serverWindow: true)
        #expect(second.settlement.failed.isEmpty && second.settlement.resent == 1 && !second.madeBeforeLogin)
        #expect(driver.waiting == [Int(spared)])
    }

    @Test func aDrainingLinkClosesOnceItsLastWrittenRequestEnds() {
        var driver = MachineDriver()
        let link = driver.connect()
        let first = driver.call().id
        let second = driver.call().id
        guard case .waitForReplies = driver.machine.receivedGoAway(link, Frame.GoAway(reconnect: true)).link else {
            Issue.record("written requests must be answered before the link closes")
            return
        }
        // Nothing new goes on a draining link.
        let waits = driver.call()
        #expect(waits.action.isQueued)
        let afterFirst = driver.end(first)
        #expect(afterFirst == nil)
        guard case .closeDrained(link) = driver.end(second) else {
            Issue.record("the last reply must close the draining link")
            return
        }
        // Closed once; the queued call is no link's and waits for the next.
        let outcome = driver.closed(link)
        #expect(outcome.settlement.failed.isEmpty && outcome.settlement.resent == 0)
        #expect(driver.waiting == [Int(waits.id)])
        let next = driver.connect()
        #expect(driver.ids(on: next) == [waits.id])
    }

    @Test func aGoAwayAskingToComeBackMovesTheSupervisorFirstOnlyWithSomewhereElseToGo() {
        func told(alternatives: Bool, reconnect: Bool, welcomed: Bool = true) -> Bool {
            var driver = MachineDriver()
            driver.machine.supervision.hasAlternatives = alternatives
            let link: UInt64
            if welcomed {
                link = driver.connect()
            } else {
                link = driver.machine.links.newGeneration()
                _ = driver.machine.attach(link)
            }
            return driver.machine.receivedGoAway(link, Frame.GoAway(reconnect: reconnect)).tellSupervisor
        }
        #expect(told(alternatives: true, reconnect: true))
        #expect(!told(alternatives: false, reconnect: true), "nowhere else to go: it reconnects after the close")
        #expect(!told(alternatives: true, reconnect: false), "for good: the session ends")
        #expect(!told(alternatives: true, reconnect: true, welcomed: false), "a handshake's GoAway fails it")
    }

    @Test func aMigratedLinkRetiresOnceItsRepliesArriveAndItsSafeRequestsMoveWhenItDrops() {
        var driver = MachineDriver()
        let old = driver.connect()
        let answered = driver.call().id
        let copy = driver.call(idempotent: true).id
        let new = driver.machine.links.newGeneration()
        guard case .login(replacing: nil) = driver.machine.links.attachSuccessor(new) else {
            Issue.record("the successor must log in")
            return
        }
        driver.machine.successorWelcomed(new, maxInFlight: 0)
        // Its login goes on it, everything else still on the current link.
        let login = driver.call(login: new)
        #expect(login.action.writtenOn == new)
        driver.end(login.id)
        let migration = driver.machine.links.completeMigration(new)
        #expect(migration == .takeOver(retired: old))
        driver.open(new)
        let early = driver.machine.retireIfDrained(old)
        #expect(early == false, "requests written there wait for replies")
        #expect(driver.call().action.writtenOn == new)
        // The retiring link's last reply is not the last: one request is still written there.
        let afterAnswer = driver.end(answered)
        #expect(afterAnswer == nil)
        // It drops before answering the idempotent one: it goes out again on the new link.
        let outcome = driver.closed(old)
        #expect(outcome.closed?.role == .retiring && outcome.drain == new)
        #expect(driver.written[new]?.last?.id == copy)
        #expect(driver.written[new]?.last?.resent == true)
        let role = driver.machine.links.role(of: old)
        #expect(role == nil)
    }

    @Test func aRetiringLinkSaysGoAwayOnceWhenItsLastReplyArrives() {
        var driver = MachineDriver()
        let old = driver.connect()
        let pending = driver.call().id
        let new = driver.machine.links.newGeneration()
        _ = driver.machine.links.attachSuccessor(new)
        driver.machine.successorWelcomed(new, maxInFlight: 0)
        _ = driver.machine.links.completeMigration(new)
        driver.open(new)
        guard case .retire(old) = driver.end(pending) else {
            Issue.record("the retiring link must be retired once drained")
            return
        }
        #expect(driver.machine.ledger.links[old]?.takesAcks == false, "no ack goes where GoAway was said")
        let again = driver.machine.retireIfDrained(old)
        #expect(again == false, "retired once")
        let outcome = driver.closed(old)
        #expect(outcome.settlement.failed.isEmpty)
    }

    @Test func shutdownFailsWhatIsNotWrittenAtOnceAndTheRestWhenItCompletes() {
        var driver = MachineDriver()
        let link = driver.connect(maxInFlight: 1)
        let written = driver.call().id
        let queued = driver.call().id
        let unwritten = driver.machine.beginShutdown()
        #expect(unwritten?.map(\.request.id) == [queued])
        driver.fail(unwritten ?? [])
        let second = driver.machine.beginShutdown()
        #expect(second == nil, "it began once")
        #expect(driver.call().action.refusal.map { if case .stopping = $0 { true } else { false } } == true)
        #expect(!driver.machine.shutdownIsIdle)
        // The grace period ends with a request still written: it fails too, and the link says GoAway.
        let completion = driver.completeShutdown()
        #expect(completion.compactMap(\.resumed) == [written])
        let goAway = completion.firstIndex {
            if case .send(.goAway, on: link) = $0 { true } else { false }
        }
        let close = completion.firstIndex {
            if case .close(link, .graceful, error: nil) = $0 { true } else { false }
        }
        #expect(goAway != nil && close != nil && goAway! < close!, "GoAway, then the close")
        #expect(completion.contains { if case .endConsumers(let error) = $0 { error.code == .shutdown } else { false } })
        #expect(driver.waiting.isEmpty && driver.machine.book.isEmpty)
        let last = driver.closed(link)
        #expect(last.closed?.end.error.code == .shutdown)
    }

    @Test func shutdownCompletesWhenTheLastWrittenRequestEnds() {
        var driver = MachineDriver()
        _ = driver.connect()
        let written = driver.call().id
        driver.fail(driver.machine.beginShutdown() ?? [])
        #expect(driver.machine.phase != .idle)
        // The driver completes the shutdown as the core does once the book is empty.
        driver.end(written)
        guard case .closing = driver.machine.phase else {
            Issue.record("the last reply must complete the shutdown")
            return
        }
        #expect(driver.waiting.isEmpty)
    }

    @Test func onlyACurrentLinksEndIsKeptAndAGoAwayWaitsForTheSupervisorOnItsOwnLink() {
        var driver = MachineDriver()
        let first = driver.connect()
        driver.machine.keepGoingAway(first, Frame.GoAway(reconnect: true))
        #expect(driver.machine.takeGoingAway(first + 1) == nil, "another link's")
        #expect(driver.machine.takeGoingAway(first)?.reconnect == true)
        #expect(driver.machine.takeGoingAway(first) == nil, "once")
        #expect(driver.machine.end(of: first) == nil)
        _ = driver.closed(first)
        guard case .closed = driver.machine.end(of: first) else {
            Issue.record("the current link's end was not kept")
            return
        }
        // A successor that drops is not kept: the current link stays the one the supervisor waits on.
        let second = driver.connect()
        #expect(driver.machine.end(of: first) != nil && driver.machine.end(of: second) == nil)
        let successor = driver.machine.links.newGeneration()
        _ = driver.machine.links.attachSuccessor(successor)
        driver.machine.successorWelcomed(successor, maxInFlight: 0)
        _ = driver.closed(successor)
        #expect(driver.machine.end(of: successor) == nil && driver.machine.lastEnd?.generation == first)
    }
}
