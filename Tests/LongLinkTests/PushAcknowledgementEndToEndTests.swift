import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

/// Acknowledgement after processing and topic patterns against a real server on loopback.
@Suite("Push acknowledgement and patterns end to end", .sharedMachine)
struct PushAcknowledgementEndToEndTests {
    /// A client of `server` with client id `clientID`, logged in as `user`, with one ack per take.
    private func configuration(_ server: RunningServer, as user: String, clientID: String = "device-1")
        -> ClientConfiguration
    {
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clientID = clientID
        configuration.ackBatchSize = 1
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        return configuration
    }

    /// A server, and a client connected to it as `user`.
    private func connected(as user: String) async throws -> (RunningServer, RunningClient) {
        let server = try await RunningServer.start(probe: Probe())
        let running = RunningClient(configuration(server, as: user))
        try await running.waitUntilConnected()
        return (server, running)
    }

    /// A consumer that dies (its task cancelled, its client torn down) between receiving pushes and
    /// acknowledging them gets them again from the next client with the same id; the one it
    /// acknowledged does not come back. Acks given twice, or after the client ended, do nothing.
    @Test func aConsumerThatDiesBeforeItsAckGetsThePushAgainFromTheNextClient() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let first = RunningClient(configuration(server, as: "dora"))
        try await first.waitUntilConnected()
        let stream = first.client.pushes(topic: "alerts", acknowledgement: .afterProcessing)
        // The consumer registers in a job on the client's loop; a call to the core queued after it
        // returns once it ran.
        _ = await first.client.statistics
        for n in 1...3 { try await server.server.push(to: "dora", topic: "alerts", payload: bytes("\(n)")) }
        let received = Mailbox<PushDelivery<Push>>()
        let consumer = Task {
            for await delivery in stream { received.put(delivery) }
        }
        var deliveries: [PushDelivery<Push>] = []
        for _ in 0..<3 { deliveries.append(try await received.next(within: .seconds(10), "a delivery")) }
        #expect(deliveries.map(\.push.seq) == [1, 2, 3])
        #expect(deliveries.map(\.message) == deliveries.map(\.push))
        deliveries[0].ack()
        deliveries[0].ack()
        try await eventually("the ack reached the server") { server.server.statistics.acksReceived >= 1 }
        // Dies while handling 2 and 3.
        consumer.cancel()
        await first.stop()
        deliveries[1].ack()
        #expect(server.server.statistics.acksReceived == 1)

        let second = RunningClient(configuration(server, as: "dora"))
        let again = second.client.pushes(topic: "alerts", acknowledgement: .afterProcessing)
        let redelivered = try await within(.seconds(10), "the redelivery") {
            var iterator = again.makeAsyncIterator()
            var deliveries: [PushDelivery<Push>] = []
            for _ in 0..<2 { if let delivery = await iterator.next() { deliveries.append(delivery) } }
            for delivery in deliveries { delivery.ack() }
            try await server.server.push(to: "dora", topic: "alerts", payload: bytes("4"))
            return deliveries.map(\.push.seq) + [await iterator.next()?.push.seq ?? 0]
        }
        // Seq 1 was acknowledged and does not come back; 4 follows 2 and 3 with nothing between.
        #expect(redelivered == [2, 3, 4])
        try await eventually("the redelivered pushes are acknowledged") {
            server.server.statistics.acksReceived >= 3
        }
        await second.stop()
        try await server.stop()
    }

    /// A push handed over and not acknowledged stays the stream's across a reconnection: the
    /// server's redelivery is dropped as one the app holds, and the late ack goes out on the new
    /// link.
    @Test func aDeliveryHeldAcrossAReconnectionIsHandedOverOnceAndItsLateAckCounts() async throws {
        let (server, running) = try await connected(as: "hal")
        let stream = running.client.pushes(topic: "alerts", acknowledgement: .afterProcessing)
        _ = await running.client.statistics
        let received = Mailbox<PushDelivery<Push>>()
        let consumer = Task {
            for await delivery in stream { received.put(delivery) }
        }
        try await server.server.push(to: "hal", topic: "alerts", payload: bytes("1"))
        let held = try await received.next(within: .seconds(10), "the delivery")
        server.server.goAwayAll(reason: "rolling restart", reconnect: true, retryAfter: .milliseconds(10))
        try await eventually("the redelivery after the reconnection is dropped") {
            await running.client.statistics.duplicatePushesDropped >= 1
        }
        held.ack()
        try await eventually("the late ack reaches the server") { server.server.statistics.acksReceived >= 1 }
        try await server.server.push(to: "hal", topic: "alerts", payload: bytes("2"))
        #expect(try await received.next(within: .seconds(10), "the next delivery").push.seq == 2)
        consumer.cancel()
        await running.stop()
        try await server.stop()
    }

    /// A stream that ends (released) with a push handed over and unacknowledged gives it back: the
    /// next consumer gets it, and the old delivery's ack does nothing.
    @Test func anUnacknowledgedPushGoesToTheNextConsumerWhenItsStreamEnds() async throws {
        let (server, running) = try await connected(as: "eve")
        let delivery: PushDelivery<Int>?
        do {
            let stream = running.client.pushes(topic: "alerts", as: Int.self, acknowledgement: .afterProcessing)
            _ = await running.client.statistics
            try await server.server.push(to: "eve", topic: "alerts", payload: bytes("41"))
            delivery = try await within(.seconds(10), "the delivery") {
                var iterator = stream.makeAsyncIterator()
                return await iterator.next()
            }
        }
        #expect(delivery?.message == 41)
        let next = running.client.pushes(topic: "alerts", as: Int.self)
        let redelivered = try await within(.seconds(10), "the push to come back") {
            var iterator = next.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(redelivered == 41)
        delivery?.ack()
        try await eventually("the push is acknowledged") { server.server.statistics.acksReceived >= 1 }
        #expect(await running.client.statistics.acksSent == 1)
        await running.stop()
        try await server.stop()
    }

    /// A push that matches a pattern stream and an exact stream goes to both and is acknowledged
    /// once, when the second took it; a push of another topic goes to neither.
    @Test func aPatternAndAnExactConsumerBothGetAPushAckedOnce() async throws {
        let (server, running) = try await connected(as: "pat")
        let pattern = try running.client.pushes(matching: "quotes.*")
        let exact = running.client.pushes(topic: "quotes.AAPL")
        _ = await running.client.statistics
        for topic in ["quotes.AAPL", "quotes.AAPL.bid", "quotes.MSFT"] {
            try await server.server.push(to: "pat", topic: topic, payload: bytes(topic))
        }
        let matched = try await within(.seconds(10), "the pattern stream to take two") {
            var iterator = pattern.makeAsyncIterator()
            var topics: [String] = []
            for _ in 0..<2 { topics.append(await iterator.next()?.topic ?? "") }
            return topics
        }
        #expect(matched == ["quotes.AAPL", "quotes.MSFT"])
        try await eventually("the push only the pattern wanted is acknowledged") {
            server.server.statistics.acksReceived >= 1
        }
        #expect(await running.client.statistics.acksSent == 1)
        let exactTopic = try await within(.seconds(10), "the exact stream to take one") {
            var iterator = exact.makeAsyncIterator()
            return await iterator.next()?.topic
        }
        #expect(exactTopic == "quotes.AAPL")
        try await eventually("the shared push is acknowledged") { server.server.statistics.acksReceived >= 2 }
        #expect(await running.client.statistics.acksSent == 2)
        let error = #expect(throws: LongLinkError.self) { try running.client.pushes(matching: "quotes.>.bid") }
        #expect(error?.code == .invalidArgument)
        await running.stop()
        try await server.stop()
    }
}
