import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLink

/// The client's one machine across sessions and links: a session's end for good and the next
/// login, a user switch's clean slate, and the acks owed when a link drops (kept for the next link
/// of their seq space, dropped when none is).
@Suite("Client state machine: sessions and acks", .sharedMachine)
struct ClientStateMachineSessionTests {
    private let error = LongLinkError(code: .unauthenticated, message: "kicked")

    @Test func aSessionsEndHandsBackEveryRequestOnceAndTheNextLoginAdmitsAgain() {
        var driver = MachineDriver()
        let link = driver.connect(maxInFlight: 1)
        _ = driver.call()
        _ = driver.call()
        let ended = driver.machine.terminate(error)
        #expect(ended)
        driver.fail(driver.machine.removeAllRequests())
        #expect(driver.waiting.isEmpty)
        guard case .stopping(let refused) = driver.call().action.refusal else {
            Issue.record("a call after the session's end must be refused with its end")
            return
        }
        #expect(refused.code == .unauthenticated)
        let closing = driver.machine.closeRequested(link)
        #expect(closing)
        let outcome = driver.closed(link)
        #expect(outcome.settlement.failed.isEmpty)
        // The app logs in again: the next session admits calls, and refuses the last one's.
        let reopened = driver.machine.links.reopen()
        #expect(reopened)
        driver.session += 1
        let late = driver.call(madeIn: driver.session - 1)
        guard case .endedSession = late.action.refusal else {
            Issue.record("a call of the last session must not run as the next")
            return
        }
        let next = driver.call()
        #expect(next.action.isQueued)
        let relinked = driver.connect()
        #expect(driver.ids(on: relinked) == [next.id])
        #expect(driver.waiting == [Int(next.id)])
    }

    @Test func aUserSwitchLeavesNothingOfTheLastUsersPushes() {
        var driver = MachineDriver()
        let link = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .exact("alerts"))
        let push = Push(seq: 1, topic: "alerts", payload: [1], epoch: 3)
        let received = driver.machine.ledger.received(push, on: link)
        #expect(received.delivery == .offer)
        _ = driver.machine.ledger.offered(push, accepted: 1, refused: false)
        let acked = driver.machine.ledger.taken([push.key], caughtUp: true)
        #expect(acked == [.armAckTimer])
        // A push of a topic nobody listens to is held.
        let held = Push(seq: 2, topic: "other", payload: [2], epoch: 3)
        let heldOne = driver.machine.ledger.received(held, on: link)
        #expect(heldOne.delivery == .held)
        // The session ends: the consumers are handed back to be finished, and the ledger is new.
        let finished = driver.machine.removeAllConsumers().count
        #expect(finished == 1)
        let ledger = driver.machine.ledger
        #expect(ledger.consumers.isEmpty && ledger.held.isEmpty && ledger.seqs.isEmpty)
        #expect(ledger.batch.isEmpty && ledger.delivered.isEmpty && ledger.links.isEmpty)
        // The next user's push of the same number is new to it, not a repeat.
        _ = driver.machine.ledger.consumerAdded((), id: 3, filter: .all)
        let next = driver.connect()
        let again = driver.machine.ledger.received(push, on: next)
        #expect(again.delivery == .offer)
    }

    /// A consumer on `link` takes the reliable push `seq` of `epoch`: its ack is owed.
    private func take(_ seq: UInt64, epoch: UInt64, on link: UInt64, _ driver: inout MachineDriver) {
        let push = Push(seq: seq, topic: "alerts", payload: [1], epoch: epoch)
        _ = driver.machine.ledger.received(push, on: link)
        _ = driver.machine.ledger.offered(push, accepted: 1, refused: false)
        _ = driver.machine.ledger.taken([push.key], caughtUp: true)
    }

    @Test func anAckOwedWhenItsLinkDropsGoesOnTheNextLinkOfItsSeqSpace() {
        var driver = MachineDriver()
        let first = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .all)
        take(1, epoch: 7, on: first, &driver)
        _ = driver.closed(first)
        // The next link has not told its seq space yet: the ack waits rather than go wrong.
        let second = driver.connect()
        #expect(driver.machine.ledger.awaiting == [PushKey(epoch: 7, seq: 1)])
        // Its first push is of the same epoch: the ack goes there, with the next batch.
        _ = driver.machine.ledger.received(Push(seq: 2, topic: "alerts", payload: [], epoch: 7), on: second)
        let acks = driver.machine.ledger.ackTimerFired()
        #expect(acks == [.ack(link: second, epoch: 7, seqs: [1])])
    }

    @Test func anAckOwedWhenItsLinkDropsIsDroppedWhenNoLinkHasItsSeqSpace() {
        var driver = MachineDriver()
        let first = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .all)
        take(1, epoch: 7, on: first, &driver)
        _ = driver.closed(first)
        let second = driver.connect()
        // The server numbers anew: seq 1 of epoch 7 means nothing there.
        _ = driver.machine.ledger.received(Push(seq: 5, topic: "alerts", payload: [], epoch: 8), on: second)
        #expect(driver.machine.ledger.awaiting.isEmpty)
        #expect(driver.machine.ledger.staleAcksDropped == 1)
    }

    @Test func aRetiringLinkTakesTheAcksOfItsSeqSpaceUntilItSaysGoAway() {
        var driver = MachineDriver()
        let old = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .all)
        let pending = driver.call().id
        take(1, epoch: 7, on: old, &driver)
        let new = driver.machine.newGeneration()
        _ = driver.machine.attachSuccessor(new)
        driver.machine.successorWelcomed(new, maxInFlight: 0)
        _ = driver.machine.completeMigration(new)
        // The login's Sync flushes the batch: the ack is of the old link's seq space, and goes there.
        let flushed = driver.open(new)
        #expect(flushed == [.cancelAckTimer, .ack(link: old, epoch: 7, seqs: [1])])
        _ = driver.machine.ledger.received(Push(seq: 9, topic: "alerts", payload: [], epoch: 8), on: new)
        take(2, epoch: 7, on: old, &driver)
        // Once it says GoAway, an ack of its seq space has no link: it is stale.
        driver.end(pending)
        let late = driver.machine.ledger.ackTimerFired()
        #expect(late.isEmpty)
        #expect(driver.machine.ledger.staleAcksDropped == 1)
    }
}

/// Logging in again, logging out, and acks a full write buffer held back, decided by the machine.
@Suite("Client state machine: relogin, logout and acks held back", .sharedMachine)
struct ClientStateMachineReloginTests {
    private let kicked = LongLinkError(code: .unauthenticated, message: "kicked")

    @Test func aLoginIsRefusedUnlessASupervisedSessionEndedAndNoOtherWaits() {
        var driver = MachineDriver()
        let notRunning = driver.machine.loginRefusal(waitsForLogin: true, loginPending: false)
        #expect(notRunning?.code == .failedPrecondition && notRunning?.message.contains("run()") == true)
        driver.machine.relogin.supervising = true
        #expect(driver.machine.loginRefusal(waitsForLogin: false, loginPending: false)?.code == .failedPrecondition)
        let running = driver.machine.loginRefusal(waitsForLogin: true, loginPending: false)
        #expect(running?.message.contains("logout()") == true)
        let tooEarly = driver.machine.beginSession()
        #expect(!tooEarly, "no session ended")
        _ = driver.machine.terminate(kicked)
        #expect(driver.machine.loginRefusal(waitsForLogin: true, loginPending: false) == nil)
        #expect(driver.machine.loginRefusal(waitsForLogin: true, loginPending: true)?.message.contains("under way") == true)
        driver.machine.relogin.loggedOut = true
        let began = driver.machine.beginSession()
        #expect(began && !driver.machine.relogin.loggedOut)
        #expect(driver.machine.terminalError == nil)
        _ = driver.machine.beginShutdown()
        #expect(driver.machine.loginRefusal(waitsForLogin: true, loginPending: false)?.code == .shutdown)
    }

    @Test func aLinkThatTakesWritesAgainSendsTheAcksItHeldBackThenTheQueue() {
        var driver = MachineDriver()
        let link = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .all)
        let push = Push(seq: 2, topic: "t", payload: [], epoch: 5)
        _ = driver.machine.ledger.received(push, on: link)
        _ = driver.machine.ledger.offered(push, accepted: 1, refused: false)
        _ = driver.machine.ledger.taken([push.key], caughtUp: false)
        _ = driver.machine.ackTimerFired()
        // The link's write buffer was full: the ack waits, and so does a new call.
        driver.machine.ackBlocked(epoch: 5, seqs: [2])
        driver.writable = false
        #expect(driver.call().action.isQueued)
        let writable = driver.machine.linkWritable(link)
        guard case .drainQueue(link) = writable.last else {
            Issue.record("the queue does not go out last: \(writable)")
            return
        }
        // Owed again with the next batch (its timer armed), ahead of the queue.
        #expect(writable.contains { if case .pushes(.armAckTimer) = $0 { true } else { false } })
        #expect(driver.machine.ackTimerFired().contains { if case .pushes(.ack(link, 5, [2])) = $0 { true } else { false } })
    }

    @Test func aLogoutAcknowledgesWhatTheAppTookThenSaysGoAwayOnAnEstablishedLinkOnce() {
        var driver = MachineDriver()
        let link = driver.connect()
        _ = driver.machine.ledger.consumerAdded((), id: 1, filter: .all)
        let push = Push(seq: 4, topic: "t", payload: [], epoch: 9)
        _ = driver.machine.ledger.received(push, on: link)
        _ = driver.machine.ledger.offered(push, accepted: 1, refused: false)
        _ = driver.machine.ledger.taken([push.key], caughtUp: false)
        guard let actions = driver.machine.logout(liveLink: link) else {
            Issue.record("no logout")
            return
        }
        #expect(actions.contains { if case .pushes(.ack(link, 9, [4])) = $0 { true } else { false } })
        guard case .send(.goAway(let goAway), link) = actions.last else {
            Issue.record("no GoAway last: \(actions)")
            return
        }
        #expect(goAway.code == .ok && driver.machine.relogin.loggedOut)
        // Without a live link nothing is said; once the session ended, a logout does nothing.
        var other = MachineDriver()
        let unlinked = other.machine.logout(liveLink: nil)
        #expect(unlinked?.isEmpty == true)
        _ = other.machine.terminate(kicked)
        let ended = other.machine.logout(liveLink: nil)
        #expect(ended == nil)
    }
}
