import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// A fleet request's reply goes to its caller as soon as the handler returns: storing it in the
/// shared window follows in the background, and a store that fails then is counted and logged.
@Suite("Storing a fleet request's reply", .sharedMachine)
struct SharedReplyStoringTests {
    /// Gives every request to this server, and holds each `finish` until an outcome is put in
    /// ``outcomes`` (or a minute passes: then it fails).
    final class HeldStore: DedupeStore {
        let finishes = Mailbox<String>()
        let outcomes = Mailbox<Result<Bool, LongLinkError>>()

        func begin(_ claim: DedupeClaimRequest) async throws(LongLinkError) -> DedupeClaim { .run }

        func finish(_ reply: DedupeFinishRequest) async throws(LongLinkError) -> Bool {
            finishes.put(reply.requestID)
            let outcome = try? await outcomes.next(within: .seconds(60), "the store's outcome")
            return try (outcome ?? .failure(LongLinkError(code: .unavailable, message: "no outcome"))).get()
        }

        func abandon(_ request: DedupeAbandonRequest) async throws(LongLinkError) -> Bool { true }

        func awaitOutcome(_ wait: DedupeWaitRequest) async throws(LongLinkError) -> DedupeClaim { .running }
    }

    /// Runs a server on `store` with a client handshaken as `c1` and logged in; `logged` gets the server's log lines.
    private func withServer(
        _ store: HeldStore, logged: Mailbox<String>, _ body: (LongLinkServer, FrameClient) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration.testing
        configuration.logger = { logged.put($0) }
        let server = LongLinkServer(
            configuration: configuration, router: Probe().router(),
            stores: ServerStores(pushes: InMemoryPushStore(), dedupe: store))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let client = try await FrameClient.connect(to: try await server.localAddress)
            _ = try await client.handshake(clientID: "c1")
            // Logged in: only then are requests de-duplicated, in the shared window too.
            try await client.logIn(as: "alice")
            try await body(server, client)
            client.close()
            server.shutdown()
            try await group.waitForAll()
        }
    }

    @Test func theReplyGoesOutBeforeItIsStored() async throws {
        let store = HeldStore()
        try await withServer(store, logged: Mailbox()) { server, client in
            let reply = try await within(.seconds(10), "the reply while its store is held") {
                try await client.call("echo", bytes("hi"), id: "1")
            }
            #expect(reply.payload == bytes("hi"))
            #expect(try await store.finishes.next(within: .seconds(10), "the reply's store") == "1")
            store.outcomes.put(.success(true))
            #expect(try await client.call("echo", id: "fence").requestID == "fence")
            #expect(server.statistics.sharedStoreFailures == 0 && server.statistics.claimsLost == 0)
        }
    }

    @Test func aReplyWhoseStoreFailsIsDeliveredCountedAndLogged() async throws {
        let store = HeldStore()
        let logged = Mailbox<String>()
        try await withServer(store, logged: logged) { server, client in
            store.outcomes.put(.failure(LongLinkError(code: .unavailable, message: "Redis went away")))
            #expect(try await client.call("echo", bytes("hi"), id: "7").payload == bytes("hi"))
            let line = try await logged.next(within: .seconds(10), "the failure's log line")
            #expect(line.contains("fleet request 7 could not be stored (Redis went away)"), "\(line)")
            #expect(server.statistics.sharedStoreFailures == 1)
        }
    }
}
