import LongLinkCore
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLink

/// Pushes as the design card shapes them: an `AsyncStream` per consumer, acknowledged after
/// hand-over.
@Suite("Push streams", .sharedMachine)
struct PushStreamTests {
    /// A server, and a client logged in as `user` with one ack per taken push (so an ack follows
    /// every take at once, and the tests can tell when one is owed).
    private func connected(as user: String) async throws -> (RunningServer, RunningClient) {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.ackBatchSize = 1
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        return (server, running)
    }

    @Test func theDefaultDeadlineStrategyIsTheTaskGroupRace() {
        #expect(ClientConfiguration(endpoints: []).deadlineStrategy == .taskGroup)
    }

    /// Two `for await` loops over one stream share its pushes: none is lost, none is handed over
    /// twice, and neither loop hangs when the client stops.
    @Test func twoLoopsOverOneStreamShareEveryPushAndBothEnd() async throws {
        let (server, running) = try await connected(as: "ann")
        let stream: AsyncStream<Push> = running.client.pushes(topic: "alerts")
        let seen = Seen()
        let count = 200
        let loops = (0..<2).map { _ in
            Task {
                for await push in stream { seen.add(push.seq) }
            }
        }
        for n in 1...count { try await server.server.push(to: "ann", topic: "alerts", payload: bytes("\(n)")) }
        try await eventually("every push is handed over") { seen.seqs.count >= count }
        #expect(seen.seqs.sorted() == Array(1...UInt64(count)))
        try await eventually("every push is acknowledged") { server.server.statistics.acksReceived >= count }
        await running.stop()
        for loop in loops { try await within(.seconds(10), "a loop to end") { await loop.value } }
        #expect(seen.seqs.count == count)
        try await server.stop()
    }

    /// Each stream is a consumer of its own and gets every push of its topic; a reliable push is
    /// acknowledged only once every consumer that got it has taken it.
    @Test func everyConsumerGetsEveryPushAndTheAckWaitsForTheLast() async throws {
        let (server, running) = try await connected(as: "ben")
        let first = running.client.pushes(topic: "alerts")
        let second = running.client.pushes(topic: nil)
        // Both consumers register in jobs on the client's loop; a call to the core queued after
        // them returns once they ran, so the pushes below cannot arrive before either is there.
        _ = await running.client.statistics
        for n in 1...5 { try await server.server.push(to: "ben", topic: "alerts", payload: bytes("\(n)")) }
        try await eventually("the pushes reached the client") { await running.client.statistics.pushesReceived >= 5 }
        let firstSeqs = try await within(.seconds(10), "the first consumer to take five") {
            var iterator = first.makeAsyncIterator()
            var seqs: [UInt64] = []
            for _ in 0..<5 { seqs.append(await iterator.next()?.seq ?? 0) }
            return seqs
        }
        #expect(firstSeqs == [1, 2, 3, 4, 5])
        // The core has collected the first consumer's takes, and still owes no ack.
        try await eventually("the takes are collected") { await running.client.statistics.pushesDelivered >= 5 }
        #expect(await running.client.statistics.acksSent == 0)
        let secondSeqs = try await within(.seconds(10), "the second consumer to take five") {
            var iterator = second.makeAsyncIterator()
            var seqs: [UInt64] = []
            for _ in 0..<5 { seqs.append(await iterator.next()?.seq ?? 0) }
            return seqs
        }
        #expect(secondSeqs == [1, 2, 3, 4, 5])
        try await eventually("every push is acknowledged") { server.server.statistics.acksReceived >= 5 }
        #expect(await running.client.statistics.acksSent == 5)
        await running.stop()
        try await server.stop()
    }

    /// A stream released without ever being iterated gives its pushes back: the next consumer
    /// gets them, and nothing was acknowledged for the one that left.
    @Test func aStreamReleasedUnreadGivesItsPushesBack() async throws {
        let (server, running) = try await connected(as: "cy")
        do {
            let unread = running.client.pushes(topic: "alerts")
            for n in 1...3 { try await server.server.push(to: "cy", topic: "alerts", payload: bytes("\(n)")) }
            try await eventually("the pushes reached the client") {
                await running.client.statistics.pushesReceived >= 3
            }
            withExtendedLifetime(unread) {}
        }
        let next = running.client.pushes(topic: "alerts")
        let seqs = try await within(.seconds(10), "the next consumer to take three") {
            var iterator = next.makeAsyncIterator()
            var seqs: [UInt64] = []
            for _ in 0..<3 { seqs.append(await iterator.next()?.seq ?? 0) }
            return seqs
        }
        #expect(seqs == [1, 2, 3])
        await running.stop()
        try await server.stop()
    }
}

/// The seqs several loops saw.
private final class Seen: Sendable {
    // A pthread lock (ThreadSanitizer sees it), where `Mutex` would do as well.
    private let state = Locked<[UInt64]>([])

    func add(_ seq: UInt64) {
        state.withLock { $0.append(seq) }
    }

    var seqs: [UInt64] { state.withLock { $0 } }
}
