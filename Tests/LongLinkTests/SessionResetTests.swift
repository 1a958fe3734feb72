import LongLinkTestSupport
import Testing

@testable import LongLink

/// The other value types at the end of a session: the subscription book and the replay book
/// keep nothing of the last user's.
@Suite("Session reset of the books", .sharedMachine)
struct SessionResetTests {
    let now = ContinuousClock.now
    let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: false)

    /// Run-time subscriptions go, entered or not; the static ones stay, with no retry state.
    @Test func theSubscriptionBookKeepsOnlyTheStaticOnesWithNoRetryState() throws {
        var book = SubscriptionBook(static: [Subscription(method: "static")], backoff: backoff)
        let entered = try book.add(method: "room.enter", payload: [1], leave: Subscription(method: "room.leave"))
        let pending = try book.add(method: "room.enter", payload: [2], leave: nil)
        #expect(book.replay(on: 1).count == 3)
        _ = book.outcome(entered, generation: 1, .success([]), now: now, random: 0)
        // The static one's replay was refused: it waits for its backoff.
        let refused = LongLinkError(code: .unavailable, message: "refused")
        guard case .replayFailed = book.outcome(0, generation: 1, .failure(refused), now: now, random: 0) else {
            Issue.record("a refused replay of a static subscription is retried")
            return
        }
        #expect(book.nextRetry != nil)
        #expect(book.endSession() == [entered, pending])
        #expect(book.count == 1)
        #expect(book.nextRetry == nil)
        #expect(book.entries[0]?.failures == 0 && book.entries[0]?.sentOn == nil)
        // The next login replays the static one alone, at once.
        #expect(book.replay(on: 2).map(\.method) == ["static"])
        #expect(book.due(now: now, open: 2).isEmpty)
    }

    /// After a session's requests are handed back, the book is as new: nothing queued or written,
    /// no bytes, no slots, and an id of the last session admitted again is no copy.
    @Test func theReplayBookHandsBackEveryRequestAndIsAsNew() {
        var book = RequestBook<Int>(queueLimit: 8, queueByteLimit: 1_000)
        let deadline = now.advanced(by: .seconds(60))
        func request(_ id: UInt64) -> PendingRequest {
            PendingRequest(id: id, method: "m", payload: [1, 2, 3], deadline: deadline, idempotent: true)
        }
        for id: UInt64 in 1...3 { _ = book.admit(request(id), caller: Int(id), route: .queue) }
        _ = book.dequeue(writingOn: 1)
        _ = book.dequeue(writingOn: 1)
        // The link dropped: both go again as copies.
        #expect(book.linkEnded(1, resendAllowed: true, serverWindow: true, loggedIn: true).resent == 2)
        #expect(book.removeAll().map(\.caller) == [1, 2, 3])
        #expect(book.isEmpty && book.queuedCount == 0 && book.writtenCount == 0)
        #expect(book.queuedBytes == 0 && book.queueSlots == 0)
        _ = book.admit(request(1), caller: 1, route: .queue)
        let next = book.dequeue(writingOn: 2)
        #expect(next?.request.id == 1 && next?.resent == false)
    }
}
