import LongLinkTestSupport
import Testing

@testable import LongLink

/// NATS-style topic patterns, matched on the client, without a socket: the matcher, the errors, and
/// the ledger's view of a pattern consumer beside an exact one.
@Suite("Topic patterns", .sharedMachine)
struct TopicPatternTests {
    @Test(arguments: [
        ("quotes.*", "quotes.AAPL", true),
        ("quotes.*", "quotes", false),
        ("quotes.*", "quotes.AAPL.bid", false),
        ("quotes.*", "quotes.", false),
        ("quotes.*", "quotesX.AAPL", false),
        ("quotes.>", "quotes.AAPL", true),
        ("quotes.>", "quotes.AAPL.bid", true),
        ("quotes.>", "quotes", false),
        ("quotes.>", "quotes.", false),
        ("*.AAPL.>", "quotes.AAPL.bid", true),
        ("*.AAPL.>", "quotes.MSFT.bid", false),
        ("*", "alerts", true),
        ("*", "alerts.x", false),
        (">", "alerts.x", true),
        ("*.*", "a.b", true),
        ("*.*", "a..b", false),
        ("quotes.AAPL", "quotes.AAPL", true),
        ("quotes.AAPL", "quotes.AAPLX", false),
        ("quotes.AAPL", "quotes.AAP", false),
        ("prix.é", "prix.é", true),
    ])
    func matches(pattern: String, topic: String, expected: Bool) throws {
        #expect(try TopicPattern(pattern).matches(topic) == expected)
    }

    @Test(arguments: ["", "quotes..bid", ".quotes", "quotes.", "quotes.>.bid", ">.x", "quo*", "quotes.a>", "**"])
    func anInvalidPatternIsATypedError(pattern: String) {
        let error = #expect(throws: LongLinkError.self) { try TopicPattern(pattern) }
        #expect(error?.code == .invalidArgument)
    }

    @Test func aPatternTooLongIsATypedError() {
        let long = String(repeating: "a.", count: TopicPattern.maxBytes / 2) + "*"
        let error = #expect(throws: LongLinkError.self) { try TopicPattern(long) }
        #expect(error?.code == .invalidArgument)
    }

    /// A pattern without wildcards is an exact topic: its consumer is found by the dictionary.
    @Test func aPatternWithoutWildcardsIsItsExactTopic() throws {
        #expect(TopicFilter(try TopicPattern("quotes.AAPL")) == .exact("quotes.AAPL"))
        #expect(TopicFilter(try TopicPattern("quotes.*")) != .exact("quotes.*"))
    }

    /// The index finds exact consumers by topic and scans only the others.
    @Test func theIndexFindsEveryConsumerThatTakesAPushAndNoOther() throws {
        var index = TopicIndex<String>()
        index.insert("exact", id: 1, filter: .exact("quotes.AAPL"))
        index.insert("pattern", id: 2, filter: TopicFilter(try TopicPattern("quotes.*")))
        index.insert("all", id: 3, filter: .all)
        index.insert("other", id: 4, filter: .exact("alerts"))
        func takers(_ topic: String) -> [String] {
            var found: [String] = []
            index.matches(for: Push(seq: 1, topic: topic, payload: [])).forEach { found.append($0) }
            return found.sorted()
        }
        #expect(takers("quotes.AAPL") == ["all", "exact", "pattern"])
        #expect(takers("quotes.MSFT") == ["all", "pattern"])
        #expect(takers("alerts") == ["all", "other"])
        index.remove(3)
        index.remove(1)
        #expect(takers("quotes.AAPL") == ["pattern"])
        #expect(!index.contains(taking: Push(seq: 1, topic: "news", payload: [])))
        #expect(index.contains(taking: Push(seq: 1, topic: "alerts", payload: [])))
    }

    /// A push a pattern consumer and an exact consumer both get is acknowledged once, when the
    /// second of them took it.
    @Test func aPushToAPatternAndAnExactConsumerIsAckedOnceBothTookIt() throws {
        var machine = PushLedger<Void>.testing(holdLimit: 10)
        _ = machine.consumerAdded((), id: 1, filter: TopicFilter(try TopicPattern("quotes.*")))
        _ = machine.consumerAdded((), id: 2, filter: TopicFilter("quotes.AAPL"))
        let push = Push(seq: 1, topic: "quotes.AAPL", payload: [])
        #expect(machine.received(push).delivery == .offer)
        #expect(machine.consumers.byID.values.count { $0.filter.takes(push) } == 2)
        _ = machine.offered(push, accepted: 2, refused: false)
        #expect(machine.outcome { $0.taken([1], caughtUp: false) }.ack == [])
        #expect(machine.outcome { $0.taken([1], caughtUp: false) }.ack == [1])
        // Nobody wants another topic: held, not offered.
        #expect(machine.received(Push(seq: 2, topic: "news", payload: [])).delivery == .held)
    }
}
