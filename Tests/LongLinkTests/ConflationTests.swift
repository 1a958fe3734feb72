import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Conflated best-effort pushes", .sharedMachine)
struct ConflationTests {
    private func subscriber(limit: Int = 100, _ conflation: PushConflation) -> PushSubscriber {
        PushSubscriber(id: 1, filter: .all, limit: limit, conflationKey: conflation.key) { _ in }
    }

    private func tick(_ symbol: String, _ price: Int) -> Push {
        Push(seq: 0, topic: "quotes", payload: bytes("\(symbol) \(price)"))
    }

    @Test func aLaggingConsumerKeepsTheLatestPushOfEachKeyInFirstArrivalOrder() async {
        let symbol = PushConflation.byKey { push in
            String(decoding: push.payload.prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
        }
        let consumer = subscriber(symbol)
        for price in 1...50 {
            for name in ["AAPL", "MSFT", "TSLA"] { _ = consumer.offer(tick(name, price)) }
        }
        #expect(consumer.offer(Push(seq: 7, topic: "quotes", payload: bytes("AAPL alert"))) == .accepted)
        #expect(consumer.offer(tick("AAPL", 51)) == .conflated)
        #expect(consumer.count == 4)
        var taken: [String] = []
        for _ in 0..<4 { taken.append(text(await consumer.next()?.payload ?? [])) }
        #expect(taken == ["AAPL 51", "MSFT 50", "TSLA 50", "AAPL alert"])
        // Taken: the next tick of a key starts a new entry, at the end.
        #expect(consumer.offer(tick("MSFT", 52)) == .accepted)
        #expect(consumer.offer(tick("AAPL", 52)) == .accepted)
        #expect(text(await consumer.next()?.payload ?? []) == "MSFT 52")
    }

    @Test func reliablePushesAreNeverConflatedAndDisabledConflationKeepsEveryPush() {
        let byTopic = subscriber(.byTopic)
        for seq in 1...5 { #expect(byTopic.offer(Push(seq: UInt64(seq), topic: "alerts", payload: [])) == .accepted) }
        #expect(byTopic.count == 5)
        let disabled = subscriber(limit: 3, .disabled)
        for price in 1...3 { #expect(disabled.offer(tick("AAPL", price)) == .accepted) }
        #expect(disabled.offer(tick("AAPL", 4)) == .refused)
        #expect(disabled.count == 3)
    }

    /// Over a real server: a consumer that reads nothing while ticks for three symbols stream in
    /// (one topic each, conflated by topic, the default) finds the newest tick of each, and every
    /// reliable push among them.
    @Test func aStalledConsumerFindsTheNewestTickPerTopicAndEveryReliablePush() async throws {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes("vic")) }
        let running = RunningClient(configuration)
        let stream = running.client.pushes()
        try await running.waitUntilConnected()
        let symbols = ["AAPL", "MSFT", "TSLA"]
        for price in 1...200 {
            for symbol in symbols {
                server.server.pushBestEffort(to: "vic", topic: "quotes.\(symbol)", payload: bytes("\(price)"))
            }
            if price % 50 == 0 {
                try await server.server.push(to: "vic", topic: "quotes.AAPL", payload: bytes("alert \(price)"))
            }
        }
        try await eventually("every push reached the client") {
            await running.client.statistics.pushesReceived == 604
        }
        let statistics = await running.client.statistics
        #expect(statistics.bestEffortPushesConflated == 597)
        #expect(statistics.bestEffortPushesDropped == 0)
        let taken = try await within(.seconds(20), "the buffered pushes") {
            var taken: [String] = []
            var iterator = stream.makeAsyncIterator()
            for _ in 0..<7 {
                guard let push = await iterator.next() else { break }
                taken.append("\(push.topic) \(text(push.payload))")
            }
            return taken
        }
        // The newest tick of each symbol, in the order the symbols first arrived, and every alert in
        // order. (How the two interleave depends on the server: best-effort and reliable pushes
        // leave it by different paths.)
        #expect(taken.filter { !$0.contains("alert") } == ["quotes.AAPL 200", "quotes.MSFT 200", "quotes.TSLA 200"])
        #expect(
            taken.filter { $0.contains("alert") } == [
                "quotes.AAPL alert 50", "quotes.AAPL alert 100", "quotes.AAPL alert 150", "quotes.AAPL alert 200",
            ])
        await running.stop()
        try await server.stop()
    }
}
