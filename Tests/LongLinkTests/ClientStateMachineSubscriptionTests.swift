import LongLinkTestSupport
import Testing

@testable import LongLink

/// The subscriptions keeper's work, as the machine hands it out: no loop, no keeper task.
@Suite("Client state machine: the subscriptions keeper", .sharedMachine)
struct ClientStateMachineSubscriptionTests {
    @Test func theKeeperGetsLeavesFirstThenWhatIsDueOnTheOpenLinkOrWhenToLookAgain() throws {
        var driver = MachineDriver()
        let now = ContinuousClock.now
        let id = try driver.machine.subscriptions.add(method: "rooms.enter", payload: [1], leave: nil)
        // No open link: nothing goes out, and nothing to wait for.
        guard case .nothing = driver.machine.subscriptionsDue(now: now) else {
            Issue.record("nothing is due without an open link")
            return
        }
        let link = driver.connect()
        let leave = Subscription(method: "rooms.leave")
        driver.machine.subscriptionLeaves = [leave]
        guard case .work(let work) = driver.machine.subscriptionsDue(now: now), work.count == 2,
            case .leave(leave) = work[0], case .send(let send) = work[1]
        else {
            Issue.record("the leave goes first, then the new subscription")
            return
        }
        #expect(send.id == id && send.generation == link)
        // Entered, then a replay refused: it goes again once its backoff passes, not before.
        _ = driver.machine.subscriptions.outcome(id, generation: link, .success([]), now: now, random: 0)
        let refusal = LongLinkError(code: .unavailable, message: "busy")
        let failed = driver.machine.subscriptions.outcome(id, generation: link, .failure(refusal), now: now, random: 1)
        guard case .replayFailed(_, let retryAt) = failed else {
            Issue.record("a refused replay is retried")
            return
        }
        guard case .retry(at: retryAt) = driver.machine.subscriptionsDue(now: now) else {
            Issue.record("the keeper looks again when the backoff ends")
            return
        }
        guard case .work(let again) = driver.machine.subscriptionsDue(now: retryAt), again.count == 1 else {
            Issue.record("the replay goes again once its backoff passed")
            return
        }
        // Refused again, and the link drops: no retry is waited for until a login replays it.
        _ = driver.machine.subscriptions.outcome(id, generation: link, .failure(refusal), now: retryAt, random: 1)
        _ = driver.closed(link)
        guard case .nothing = driver.machine.subscriptionsDue(now: retryAt) else {
            Issue.record("retries wait for an open link")
            return
        }
    }
}
