import Foundation
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

/// What a ``LongLinkTestServer`` keeps across its restarts: by default its durable store, as a
/// server restarted on the same disk would; with `stores: { .inMemory() }`, nothing.
@Suite("LongLinkTestServer's stores across restarts", .sharedMachine, .timeLimit(.minutes(3)))
struct LongLinkTestServerStoreTests {
    private static func router() -> Router {
        var router = Router()
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        return router
    }

    /// Connects as alice, syncs, and returns the first push on `t`.
    private static func firstPush(from harness: LongLinkTestServer, login id: String) async throws -> Frame.Push {
        let address = try harness.localAddress
        let client = try await FrameClient.connect(host: address.host, port: address.port ?? 0)
        defer { client.close() }
        _ = try await client.handshake(clientID: "store-tests")
        #expect(try await client.call("login", "alice", id: id).status == nil)
        try await client.send(.sync(Frame.Sync()))
        return try await client.push(topic: "t", within: .seconds(10))
    }

    @Test("by default a push stored before a crash or a graceful restart reaches the client after it")
    func theDefaultStoreSurvivesRestarts() async throws {
        let harness = LongLinkTestServer(router: Self.router)
        try await harness.start()
        let directory = try #require(harness.dataDirectory)
        let first = try await harness.server!.push(to: "alice", topic: "t", payload: Array("before the crash".utf8))
        try await harness.restart(.crash)
        let afterCrash = try await Self.firstPush(from: harness, login: "l1")
        #expect(afterCrash.seq == first)
        #expect(afterCrash.text == "before the crash")

        try await harness.restart(.graceful)
        // Not acknowledged: still there after a graceful restart too, with the seq it had.
        let afterRestart = try await Self.firstPush(from: harness, login: "l2")
        #expect(afterRestart.seq == first)
        // stop() then start() is a restart as well: the same directory again.
        await harness.stop()
        try await harness.start()
        #expect(harness.dataDirectory == directory)
        #expect(try await Self.firstPush(from: harness, login: "l3").seq == first)
        await harness.stop()
        #expect(FileManager.default.fileExists(atPath: directory + "/longlink.sqlite"))
    }

    @Test("the harness removes its store's directory when it goes away")
    func theDirectoryGoesWithTheHarness() async throws {
        var harness: LongLinkTestServer? = LongLinkTestServer(router: Self.router)
        try await harness?.start()
        let directory = try #require(harness?.dataDirectory)
        await harness?.stop()
        #expect(FileManager.default.fileExists(atPath: directory))
        harness = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test("with stores: { .inMemory() } a crash loses the push not yet acknowledged")
    func inMemoryStoresAreLostOnRestart() async throws {
        let harness = LongLinkTestServer(stores: { .inMemory() }, router: Self.router)
        try await harness.start()
        #expect(harness.dataDirectory == nil)
        _ = try await harness.server!.push(to: "alice", topic: "t", payload: Array("lost".utf8))
        try await harness.restart(.crash)
        _ = try await harness.server!.push(to: "alice", topic: "t", payload: Array("after".utf8))
        let push = try await Self.firstPush(from: harness, login: "l1")
        #expect(push.text == "after")
        await harness.stop()
    }
}
