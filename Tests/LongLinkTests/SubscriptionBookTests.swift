import LongLinkTestSupport
import Testing

@testable import LongLink

/// The subscription book without a socket: what each login replays, what goes out between
/// logins, which outcomes count, and the backoff of refused replays.
@Suite(.sharedMachine) struct SubscriptionBookTests {
    let now = ContinuousClock.now
    let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1), multiplier: 2, jitter: false)
    let refused = LongLinkError(code: .unavailable, message: "refused")
    let lost = LongLinkError(code: .connectionLost, message: "lost")

    func book(static subscriptions: [Subscription] = []) -> SubscriptionBook {
        SubscriptionBook(static: subscriptions, backoff: backoff)
    }

    @Test func everyLoginReplaysEverySubscriptionOnceInTheOrderMade() throws {
        var book = book(static: [Subscription(method: "static")])
        let a = try book.add(method: "a", payload: [], leave: nil)
        let b = try book.add(method: "b", payload: [], leave: nil)
        #expect(book.replay(on: 1).map(\.method) == ["static", "a", "b"])
        #expect(book.replay(on: 1).isEmpty)
        let c = try book.add(method: "c", payload: [], leave: nil)
        // Made during the login: the next round of the same login sends it.
        #expect(book.replay(on: 1).map(\.id) == [c])
        #expect(book.replay(on: 2).map(\.id) == [0, a, b, c])
        #expect(book.replay(on: 2).allSatisfy { $0.generation == 2 })
    }

    @Test func betweenLoginsOnlyNewSubscriptionsAndDueRetriesGoOut() throws {
        var book = book()
        let a = try book.add(method: "a", payload: [], leave: nil)
        #expect(book.due(now: now, open: nil).isEmpty)
        #expect(book.due(now: now, open: 1).map(\.id) == [a])
        #expect(book.due(now: now, open: 1).isEmpty)
        guard case .resolveFirst = book.outcome(a, generation: 1, .success([1]), now: now, random: 0) else {
            Issue.record("the first reply goes to the caller")
            return
        }
        let refusal = book.outcome(a, generation: 1, .failure(refused), now: now, random: 0)
        guard case .replayFailed(_, let retryAt) = refusal else {
            Issue.record("a refused replay is reported")
            return
        }
        #expect(retryAt == now + .milliseconds(100))
        #expect(book.nextRetry == retryAt)
        #expect(book.due(now: now + .milliseconds(99), open: 1).isEmpty)
        #expect(book.due(now: retryAt, open: 1).map(\.id) == [a])
        // Refused again: the backoff grows.
        let again = book.outcome(a, generation: 1, .failure(refused), now: now, random: 0)
        guard case .replayFailed(_, let later) = again else {
            Issue.record("a refused replay is reported")
            return
        }
        #expect(later == now + .milliseconds(200))
    }

    @Test func aLostLinkOrAStaleOutcomeChangesNothing() throws {
        var book = book()
        let a = try book.add(method: "a", payload: [], leave: nil)
        _ = book.replay(on: 1)
        guard case .none = book.outcome(a, generation: 1, .failure(lost), now: now, random: 0) else {
            Issue.record("a lost link is not the subscription's failure")
            return
        }
        _ = book.replay(on: 2)
        // The first reply counts wherever it came from; a later one from an old link does not.
        guard case .resolveFirst = book.outcome(a, generation: 1, .success([]), now: now, random: 0) else {
            Issue.record("the first reply goes to the caller")
            return
        }
        guard case .none = book.outcome(a, generation: 1, .success([]), now: now, random: 0) else {
            Issue.record("a stale reply is dropped")
            return
        }
        guard case .none = book.outcome(a, generation: 1, .failure(refused), now: now, random: 0) else {
            Issue.record("a stale refusal is dropped")
            return
        }
        guard case .replayed = book.outcome(a, generation: 2, .success([]), now: now, random: 0) else {
            Issue.record("the current link's reply is a replay")
            return
        }
    }

    @Test func aRefusedFirstRequestEndsTheSubscriptionAndAStaticOneIsRetried() throws {
        var book = book(static: [Subscription(method: "static")])
        let a = try book.add(method: "a", payload: [], leave: Subscription(method: "leave"))
        _ = book.replay(on: 1)
        guard case .failFirst = book.outcome(a, generation: 1, .failure(refused), now: now, random: 0) else {
            Issue.record("the caller gets the refusal")
            return
        }
        #expect(book.count == 1)
        guard case .replayFailed = book.outcome(0, generation: 1, .failure(refused), now: now, random: 0) else {
            Issue.record("a static subscription is retried")
            return
        }
    }

    @Test func theLeaveRequestGoesOnlyWhereTheServerMayHoldTheSubscription() throws {
        var book = book()
        let unsent = try book.add(method: "a", payload: [], leave: Subscription(method: "leave a"))
        let sent = try book.add(method: "b", payload: [], leave: Subscription(method: "leave b"))
        let silent = try book.add(method: "c", payload: [], leave: nil)
        _ = book.due(now: now, open: nil)
        #expect(book.remove(unsent) == nil)
        _ = book.due(now: now, open: 1)
        #expect(book.remove(sent)?.method == "leave b")
        #expect(book.remove(sent) == nil)
        #expect(book.remove(silent) == nil)
        #expect(book.replay(on: 2).isEmpty)
    }

    @Test func theBookIsBounded() throws {
        var book = book()
        for index in 0..<SubscriptionBook.limit { _ = try book.add(method: "\(index)", payload: [], leave: nil) }
        #expect(throws: LongLinkError.self) { try book.add(method: "one more", payload: [], leave: nil) }
    }
}

@Suite("Typed static subscriptions", .sharedMachine)
struct TypedSubscriptionTests {
    struct Watch: LongLinkRequest, Encodable {
        typealias Reply = [String]
        static let method = "quotes.subscribe"
        var symbols: [String]
    }

    struct Unencodable: LongLinkRequest, Encodable {
        typealias Reply = Int
        static let method = "never"
        func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "no"))
        }
    }

    @Test func aTypedRequestGivesItsMethodAndEncodedPayload() throws {
        let subscription = try Subscription(Watch(symbols: ["AAPL"]))
        #expect(subscription.method == "quotes.subscribe")
        #expect(String(decoding: subscription.payload, as: UTF8.self) == #"{"symbols":["AAPL"]}"#)
        #expect(throws: LongLinkError.self) { try Subscription(Unencodable()) }
    }
}
