import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLink

/// `throwingPushes` ends with the reason the client stopped; `pushes` ends silently.
@Suite("Why push sequences end", .sharedMachine)
struct PushEndTests {
    private func client(_ endpoint: Endpoint, as user: String) -> RunningClient {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        return RunningClient(configuration)
    }

    /// How a loop over `sequence` ended: the elements it got and the error it threw, if any.
    private static func drain<Element: Sendable>(_ sequence: PushSequence<Element>) async throws -> (
        [Element], LongLinkError?
    ) {
        try await within(.seconds(20), "the push sequence to end") {
            var elements: [Element] = []
            // The loop's error is typed: `error` is a LongLinkError, no cast.
            do throws(LongLinkError) {
                for try await element in sequence { elements.append(element) }
                return (elements, nil)
            } catch {
                return (elements, error)
            }
        }
    }

    @Test func aShutdownEndsThrowingPushesWithTheShutdownCode() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint, as: "alice")
        let throwing = running.client.throwingPushes(topic: "alerts")
        let silent = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        try await server.server.push(to: "alice", topic: "alerts", payload: bytes("one"))
        running.client.shutdown()
        let ended = try await running.runEnded()
        #expect(throws: Never.self) { try ended.get() }
        let (pushes, error) = try await Self.drain(throwing)
        #expect(pushes.map { text($0.payload) }.allSatisfy { $0 == "one" })
        #expect(error?.code == .shutdown)
        let silentEnded = try await within(.seconds(20), "the stream to end") {
            for await _ in silent {}
            return true
        }
        #expect(silentEnded)
        try await server.stop()
    }

    @Test func aKickEndsThrowingPushesWithGoAway() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = client(server.endpoint, as: "bob")
        let alerts = running.client.throwingPushes(topic: "alerts", as: String.self)
        try await running.waitUntilConnected()
        #expect(server.server.kick(principal: "bob", reason: "logged in elsewhere") == 1)
        let (_, error) = try await Self.drain(alerts)
        #expect(error?.code == .goAway)
        #expect(error?.message.contains("logged in elsewhere") == true)
        let ended = try await running.runEnded()
        #expect(throws: LongLinkError.self) { try ended.get() }
        try await server.stop()
    }

    @Test func aRejectedLoginEndsThrowingPushesWithUnauthenticated() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint, as: "intruder")
        let (_, error) = try await Self.drain(running.client.throwingPushes())
        #expect(error?.code == .unauthenticated)
        let ended = try await running.runEnded()
        #expect(throws: LongLinkError.self) { try ended.get() }
        try await server.stop()
    }

    @Test func typedThrowingPushesSkipWhatDoesNotDecode() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint, as: "carol")
        let quotes = running.client.throwingPushes(topic: "quotes", as: Int.self)
        try await running.waitUntilConnected()
        for payload in ["1", "not a number", "3"] {
            try await server.server.push(to: "carol", topic: "quotes", payload: bytes(payload))
        }
        var received: [Int] = []
        for try await quote in quotes {
            received.append(quote)
            if received.count == 2 { break }
        }
        #expect(received == [1, 3])
        running.client.shutdown()
        let ended = try await running.runEnded()
        #expect(throws: Never.self) { try ended.get() }
        try await server.stop()
    }

    @Test func aCancelledConsumerEndsWithoutAnError() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint, as: "dave")
        let alerts = running.client.throwingPushes(topic: "alerts")
        try await running.waitUntilConnected()
        // The loop runs in the cancelled task itself (not inside a bounded wait, which would answer
        // an early cancellation with its own CancellationError); its outcome comes back through a
        // mailbox, so that the wait for it is bounded.
        let outcome = Mailbox<(count: Int, error: LongLinkError?)>()
        let consumer = Task {
            var count = 0
            do throws(LongLinkError) {
                for try await _ in alerts { count += 1 }
                outcome.put((count, nil))
            } catch {
                outcome.put((count, error))
            }
        }
        consumer.cancel()
        let (count, error) = try await outcome.next(within: .seconds(20), "the cancelled consumer to end")
        #expect(count == 0)
        #expect(error == nil)
        running.client.shutdown()
        let ended = try await running.runEnded()
        #expect(throws: Never.self) { try ended.get() }
        try await server.stop()
    }
}
