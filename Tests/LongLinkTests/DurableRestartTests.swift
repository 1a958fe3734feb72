import LongLinkCore
import LongLink
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLinkServer

/// A real server on a ``DurableStore``, crashed and started again on the same data directory,
/// with a real client behind a fault proxy: what the old process stored reaches the client once,
/// and what it answered is not run again.
@Suite("Durable store across a server restart", .sharedMachine, .timeLimit(.minutes(5)))
struct DurableRestartTests {
    /// The server side: the harness, the store each instance opened, and the executions of `count`.
    final class Harness: Sendable {
        let directory: TemporaryDirectory
        let server: LongLinkTestServer
        let stores = Locked<[DurableStore]>([])
        let executions = Locked(0)
        let started = Mailbox<Void>()
        let go = Mailbox<Void>()

        init() throws {
            let directory = try TemporaryDirectory("durable-restart")
            let (stores, executions, started, go) = (stores, executions, started, go)
            self.directory = directory
            server = LongLinkTestServer(
                stores: {
                    let store = try DurableStore(directory: directory.path)
                    stores.withLock { $0.append(store) }
                    return ServerStores(pushes: store, dedupe: store)
                },
                router: {
                    var router = Router()
                    router.register("login") { payload, context in
                        context.bind(principal: String(decoding: payload, as: UTF8.self))
                        return []
                    }
                    // Not idempotent: counted, then held until the test lets it answer.
                    router.register("count") { _, _ in
                        let count = executions.withLock { count in
                            count += 1
                            return count
                        }
                        started.put(())
                        try await go.next(within: .seconds(30), "the test's go")
                        return Array("\(count)".utf8)
                    }
                    return router
                })
        }

        /// The store of the running instance.
        var store: DurableStore { stores.withLock { $0.last! } }

        /// Finished replies in the file.
        func storedReplies() async throws -> Int64? {
            try await store.engine.integer("SELECT count(*) FROM replies WHERE state = 1")
        }
    }

    @Test func pushesAndAnsweredRequestsSurviveACrashOfTheServer() async throws {
        let harness = try Harness()
        try await harness.server.start()
        let proxy = FaultProxy(upstream: try harness.server.endpoint)
        try await proxy.start()
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        configuration.clientID = "phone"
        configuration.login = { session in _ = try await session.request("login", payload: Array("ann".utf8)) }
        let running = RunningClient(configuration)
        let client = running.client
        let alerts = client.pushes(topic: "alerts")
        let delivered = Mailbox<Push>()
        let reader = Task { for await push in alerts { delivered.put(push) } }
        func take(_ count: Int) async throws -> [Push] {
            var pushes: [Push] = []
            for _ in 0..<count { pushes.append(try await delivered.next(within: .seconds(20), "a push")) }
            return pushes
        }
        let server = try #require(harness.server.server)
        for n in 1...2 { try await server.push(to: "ann", topic: "alerts", payload: bytes("alert \(n)")) }
        #expect(try await take(2).map(\.seq) == [1, 2])
        try await eventually("the acks reach the file") {
            (try? await harness.store.unacknowledgedCount(principal: "ann")) == 0
        }

        // A request runs; the client loses its link while it does, and stays away.
        let reply = Task {
            try await client.request("count", payload: [], options: RequestOptions(timeout: .seconds(60)))
        }
        try await harness.started.next(within: .seconds(10), "the request to start")
        await proxy.refuseConnections(reset: true)
        await proxy.apply(.reset)
        harness.go.put(())
        // A second execution, should one happen, is let through too: the counts show it.
        harness.go.put(())
        try await eventually("the reply is stored") { (try? await harness.storedReplies()) == 1 }
        // Produced while the client is away: stored, not delivered.
        for n in 3...5 { try await server.push(to: "ann", topic: "alerts", payload: bytes("alert \(n)")) }

        try await harness.server.restart(.crash)
        #expect(harness.stores.withLock { $0.count } == 2)
        await proxy.acceptConnections()

        // The resent request is answered from the stored reply; the pushes arrive once, in order.
        #expect(try await within(.seconds(30), "the replayed reply") { try await reply.value } == bytes("1"))
        let later = try await take(3)
        #expect(later.map(\.seq) == [3, 4, 5])
        #expect(later.map { String(decoding: $0.payload, as: UTF8.self) } == ["alert 3", "alert 4", "alert 5"])
        #expect(harness.executions.withLock { $0 } == 1)
        let restarted = try #require(harness.server.server)
        #expect(restarted.statistics.requestsReplayed == 1)
        try await eventually("the acks reach the file") {
            (try? await harness.store.unacknowledgedCount(principal: "ann")) == 0
        }
        #expect(await client.statistics.pushesDelivered == 5)
        // Nothing else arrives: no push was delivered twice.
        let push = try await restarted.push(to: "ann", topic: "alerts", payload: bytes("alert 6"))
        #expect(try await take(1).map(\.seq) == [push])
        #expect(delivered.count == 0)
        _ = await running.stop()
        reader.cancel()
        await proxy.stop()
        await harness.server.stop()
    }
}
