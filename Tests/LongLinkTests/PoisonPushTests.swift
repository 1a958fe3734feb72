import LongLinkCore
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLink

/// A reliable push a typed stream cannot decode ends: by default a dead letter (acknowledged,
/// counted, logged by topic and seq), or where the app's disposition says; never redelivered
/// after every reconnection.
@Suite("Poison pushes end", .sharedMachine)
struct PoisonPushTests {
    struct Alert: Codable, Sendable, Equatable { var price: Double }

    private static let poison = "POISON-PAYLOAD not json"

    private static func client(
        _ endpoint: Endpoint, as user: String, logs: Locked<[LogRecord]>,
        _ adjust: (inout ClientConfiguration) -> Void = { _ in }
    ) -> RunningClient {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = { session in _ = try await session.request("login", payload: bytes(user)) }
        configuration.logger = { record in logs.withLock { $0.append(record) } }
        adjust(&configuration)
        return RunningClient(configuration)
    }

    /// The stream's elements, read by a task of their own, in a mailbox the test waits on (bounded).
    private static func reading(_ stream: AsyncStream<Alert>) -> (Mailbox<Alert>, Task<Void, Never>) {
        let alerts = Mailbox<Alert>()
        let task = Task { for await alert in stream { alerts.put(alert) } }
        return (alerts, task)
    }

    /// Makes the server send `GoAway` asking to reconnect, and waits for the client's next link.
    private static func reconnect(_ running: RunningClient, _ server: RunningServer) async throws {
        let connects = await running.client.statistics.connects
        server.server.goAwayAll(reason: "restarting", reconnect: true)
        try await eventually("the client reconnected") { await running.client.statistics.connects > connects }
    }

    @Test func withoutAHandlerAPoisonPushIsADeadLetterAndNeverComesBack() async throws {
        let store = InMemoryPushStore()
        let server = try await RunningServer.start(probe: Probe(), store: store)
        let logs = Locked<[LogRecord]>([])
        let running = Self.client(server.endpoint, as: "pia", logs: logs)
        let (alerts, reader) = Self.reading(running.client.pushes(topic: "alerts", as: Alert.self))
        try await running.waitUntilConnected()
        try await server.server.push(to: "pia", topic: "alerts", payload: bytes(Self.poison))
        try await server.server.push(to: "pia", topic: "alerts", payload: bytes(#"{"price":1}"#))
        #expect(try await alerts.next() == Alert(price: 1))
        try await eventually("the poison push is acknowledged with the other") {
            store.unacknowledgedCount(principal: "pia") == 0
        }
        // The next link's Sync brings nothing of it: the push after it arrives, the poison does not.
        try await Self.reconnect(running, server)
        try await server.server.push(to: "pia", topic: "alerts", payload: bytes(#"{"price":2}"#))
        #expect(try await alerts.next() == Alert(price: 2))
        let statistics = await running.client.statistics
        #expect(statistics.undecodablePushes == 1)
        #expect(statistics.deadLetterPushes == 1)
        let records = logs.withLock { $0 }
        let deadLetter = records.first { $0.message.contains("dead letter") }
        #expect(deadLetter?.metadata["topic"] == "alerts")
        #expect(deadLetter?.metadata["seq"] == "1")
        #expect(deadLetter?.level == .error)
        // Never its payload.
        #expect(
            !records.contains { record in
                record.message.contains("POISON") || record.metadata.values.contains { $0.contains("POISON") }
            })
        reader.cancel()
        await running.stop()
        try await server.stop()
    }

    /// With a handler and no disposition, the handler sees it and it is acknowledged after.
    @Test func aHandlerSeesThePoisonPushAndItIsAcknowledgedAfter() async throws {
        let store = InMemoryPushStore()
        let server = try await RunningServer.start(probe: Probe(), store: store)
        let seen = Mailbox<String>()
        let running = Self.client(server.endpoint, as: "pol", logs: Locked([])) {
            $0.undecodablePushHandler = { push, _ in seen.put(text(push.payload)) }
        }
        let (alerts, reader) = Self.reading(running.client.pushes(topic: "alerts", as: Alert.self))
        try await running.waitUntilConnected()
        try await server.server.push(to: "pol", topic: "alerts", payload: bytes(Self.poison))
        try await server.server.push(to: "pol", topic: "alerts", payload: bytes(#"{"price":1}"#))
        #expect(try await alerts.next() == Alert(price: 1))
        #expect(try await seen.next() == Self.poison)
        try await eventually("both are acknowledged") { store.unacknowledgedCount(principal: "pol") == 0 }
        #expect(await running.client.statistics.deadLetterPushes == 1)
        reader.cancel()
        await running.stop()
        try await server.stop()
    }

    /// The app's disposition may leave a push with the server (a topic an update will decode):
    /// it is not acknowledged, and comes again with the next link's `Sync`, to be decided on again.
    @Test func theAppsDispositionMayLeaveAPoisonPushWithTheServer() async throws {
        let store = InMemoryPushStore()
        let server = try await RunningServer.start(probe: Probe(), store: store)
        let decided = Mailbox<UInt64>()
        let running = Self.client(server.endpoint, as: "pat", logs: Locked([])) {
            $0.undecodablePushDisposition = { push, _ in
                decided.put(push.seq)
                return .leaveUnacknowledged
            }
        }
        let (alerts, reader) = Self.reading(running.client.pushes(topic: "alerts", as: Alert.self))
        try await running.waitUntilConnected()
        try await server.server.push(to: "pat", topic: "alerts", payload: bytes(Self.poison))
        try await server.server.push(to: "pat", topic: "alerts", payload: bytes(#"{"price":1}"#))
        #expect(try await alerts.next() == Alert(price: 1))
        #expect(try await decided.next() == 1)
        try await eventually("seq 2 is acknowledged") { server.server.statistics.acksReceived >= 1 }
        try await eventually("the store keeps seq 1") { store.unacknowledgedCount(principal: "pat") == 1 }
        try await Self.reconnect(running, server)
        #expect(try await decided.next() == 1)
        #expect(store.unacknowledgedCount(principal: "pat") == 1)
        #expect(await running.client.statistics.deadLetterPushes == 0)
        reader.cancel()
        await running.stop()
        try await server.stop()
    }
}
