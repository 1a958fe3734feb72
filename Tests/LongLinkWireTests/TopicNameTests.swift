import LongLinkWire
import Testing

private struct Tick: Codable, Sendable { var price: Double }

private enum Alerts: LongLinkTopic {
    typealias Message = Tick
    static let name = "alerts"
    static let kind = TopicKind.reliable
}

private enum Quotes: LongLinkTopic {
    typealias Message = Tick
    static let name = "quotes.*.last"
    static let kind = TopicKind.bestEffort
}

private enum Books: LongLinkTopic {
    typealias Message = Tick
    static let name = "books.*.>"
    static let kind = TopicKind.bestEffort
}

@Suite("A topic's members: TopicName from LongLinkTopic.topic(_:)")
struct TopicNameTests {
    @Test func wildcardsAreReplacedInOrderAndTheRestTakesWhatIsLeft() {
        #expect(Quotes.topic("AAPL").text == "quotes.AAPL.last")
        #expect(Quotes.topic("AAPL").problem == nil)
        #expect(Books.topic("AAPL", "bid").text == "books.AAPL.bid")
        #expect(Books.topic("AAPL", "bid", "3").text == "books.AAPL.bid.3")
        #expect(Books.topic("AAPL", "bid", "3").problem == nil)
    }

    @Test func aTopicOfOneNameIsItsOwnOnlyMember() {
        #expect(Alerts.pattern == nil)
        #expect(Alerts.topic().text == "alerts")
        #expect(Alerts.topic().problem == nil)
        #expect(Alerts.topic("x").problem != nil)
    }

    @Test func namesOutsideTheFamilyAreFlagged() {
        #expect(Quotes.pattern?.text == "quotes.*.last")
        for name in [Quotes.topic(), Quotes.topic("A", "B"), Quotes.topic("A.B"), Quotes.topic(""), Quotes.topic("*")] {
            #expect(name.problem != nil, "\(name)")
        }
        #expect(Quotes.topic(">").problem != nil)
        #expect(Books.topic("AAPL").problem != nil)
        #expect(Books.topic("AAPL", "").problem != nil)
    }

    @Test func kindsSayWhetherTheServerKeepsAPush() {
        #expect(Alerts.kind.isReliable)
        #expect(!Quotes.kind.isReliable)
        #expect("\(TopicKind.bestEffort)" == "best effort")
    }
}
