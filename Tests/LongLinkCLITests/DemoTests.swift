import Foundation
import LongLinkCLISupport
import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import longlink

@Suite("Demo service pieces", .sharedMachine)
struct DemoTests {
    @Test func walkIsDeterministicPerSeedAndSymbol() {
        var first = QuoteWalk(seed: 42)
        var second = QuoteWalk(seed: 42)
        var third = QuoteWalk(seed: 43)
        let a = (0..<200).map { _ in first.step(["AAPL", "MSFT"]) }
        // The other walk watches more symbols, in another order: AAPL's path is the same.
        let b = (0..<200).map { _ in second.step(["ZZZ", "AAPL"]) }
        let c = (0..<200).map { _ in third.step(["AAPL"]) }
        let aaplA = a.map { $0[0] }
        let aaplB = b.map { $0[1] }
        #expect(aaplA == aaplB)
        #expect(aaplA.map(\.cents) != c.map { $0[0].cents })
        #expect(aaplA.allSatisfy { $0.cents >= 1 })
    }

    @Test func walkStepsStayWithinVolatility() {
        var walk = QuoteWalk(seed: 7, volatilityBasisPoints: 20, alertStepCents: 100)
        var price = QuoteWalk.startingCents("X")
        var alerts = 0
        for _ in 0..<5_000 {
            let tick = walk.step("X")
            #expect(abs(tick.cents - price) <= max(1, price * 20 / 10_000))
            #expect(tick.crossedThreshold == (price / 100 != tick.cents / 100))
            if tick.crossedThreshold { alerts += 1 }
            price = tick.cents
        }
        #expect(alerts > 0)
    }

    /// The README's path (`serve` with its defaults, `subscribe` to one symbol's alerts) shows an
    /// alert within seconds and keeps showing them: over a minute of steps, for twenty seeds, no
    /// gap between alerts is longer than 15 s.
    @Test func theDefaultFeedAlertsWithinSeconds() {
        let configuration = DemoFeed.Configuration()
        let stepsPerSecond = Int(Duration.seconds(1) / configuration.interval)
        for seed in UInt64(1)...20 {
            var walk = QuoteWalk(
                seed: seed, volatilityBasisPoints: configuration.volatilityBasisPoints,
                alertStepCents: configuration.alertStepCents)
            var last = 0
            var longestGap = 0
            for step in 1...(60 * stepsPerSecond) where walk.step("AAPL").crossedThreshold {
                longestGap = max(longestGap, step - last)
                last = step
            }
            longestGap = max(longestGap, 60 * stepsPerSecond - last)
            #expect(longestGap <= 15 * stepsPerSecond, "seed \(seed): \(longestGap) steps without an alert")
        }
    }

    @Test func noAlertsWithoutAStep() {
        var walk = QuoteWalk(seed: 1, alertStepCents: nil)
        #expect((0..<1_000).allSatisfy { _ in !walk.step("X").crossedThreshold })
    }

    @Test func pricesAndPushPayloads() throws {
        #expect(QuoteWalk.format(cents: 12_345) == "123.45")
        #expect(QuoteWalk.format(cents: 5) == "0.05")
        #expect(QuoteWalk.format(cents: 1_000) == "10.00")
        let quote = DemoFeed.quoteJSON(symbol: "A\"B", cents: 10_001, time: 1_700_000_000_000)
        #expect(String(decoding: quote, as: UTF8.self) == #"{"symbol":"A\"B","price":100.01,"time":1700000000000}"#)
        let decoded = try JSONDecoder().decode(
            DemoMessages.Alert.self, from: Data(DemoFeed.alertJSON(symbol: "X", cents: 500, id: 3)))
        #expect(decoded == DemoMessages.Alert(symbol: "X", price: 5, id: 3))
    }

    @Test func alertStepPrices() {
        #expect(QuoteWalk.parseCents("5") == 500)
        #expect(QuoteWalk.parseCents("0.25") == 25)
        #expect(QuoteWalk.parseCents("12.5") == 1_250)
        #expect(QuoteWalk.parseCents("0") == 0)
        for text in ["", ".5", "5.", "1.234", "-1", "+1", "1e2", "9999999999999"] {
            #expect(QuoteWalk.parseCents(text) == nil, "\(text)")
        }
    }

    @Test func failurePayloads() throws {
        #expect(try DemoService.parseFailure("5:nope") == (StatusCode.notFound, "nope"))
        #expect(try DemoService.parseFailure("NOT_FOUND:gone: really") == (StatusCode.notFound, "gone: really"))
        #expect(try DemoService.parseFailure("unavailable") == (StatusCode.unavailable, ""))
        #expect(try DemoService.parseFailure("99:x") == (StatusCode(rawValue: 99), "x"))
        #expect(try DemoService.parseFailure("OK:fine") == (StatusCode.ok, "fine"))
        #expect(throws: LongLinkError.self) { try DemoService.parseFailure("NOPE:x") }
        #expect(throws: LongLinkError.self) { try DemoService.parseFailure(":x") }
    }

    @Test func printableText() {
        #expect(FrameJSON.printableText(Array("tab\tline\nü".utf8)) == "tab\tline\nü")
        #expect(FrameJSON.printableText([0x00]) == nil)
        #expect(FrameJSON.printableText([0x7F]) == nil)
        #expect(FrameJSON.printableText(Array("\u{85}".utf8)) == nil)
        #expect(FrameJSON.printableText([0xC3]) == nil)
    }

    @Test func jsonStringEscapes() {
        #expect(JSONObject.quoted("a\"b\\c\u{01}\u{1F}é") == #""a\"b\\c\u0001\u001fé""#)
    }
}
