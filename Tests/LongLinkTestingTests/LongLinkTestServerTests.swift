import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite("LongLinkTestServer", .sharedMachine)
struct LongLinkTestServerTests {
    private static func makeHarness() -> LongLinkTestServer {
        var configuration = ServerConfiguration()
        configuration.serverID = "harness"
        configuration.drainTimeout = .seconds(1)
        return LongLinkTestServer(configuration: configuration) {
            var router = Router()
            router.register("echo") { payload, _ in payload }
            return router
        }
    }

    @Test("restarts on the same port, gracefully and after a crash; new connections get a Welcome")
    func restartsOnTheSamePort() async throws {
        let harness = Self.makeHarness()
        let address = try await harness.start()
        #expect(address.port != 0)

        let first = try await TestPeer.connect(to: try harness.endpoint)
        #expect(try await handshake(first)?.serverID == "harness")

        // Graceful: the old client hears GoAway, then the stream ends.
        try await harness.restart(.graceful)
        try await first.waitForClose()
        let goodbye = frames(in: first.state.value.bytes) ?? []
        #expect(goodbye.contains { if case .goAway = $0 { true } else { false } })
        #expect(try harness.localAddress == address)

        let second = try await TestPeer.connect(to: .tcp(host: address.host, port: address.port ?? 0))
        #expect(try await handshake(second) != nil)

        // Crash: the stream just ends, no GoAway.
        try await harness.restart(.crash)
        try await second.waitForClose()
        #expect((frames(in: second.state.value.bytes) ?? []).count == 1)

        let third = try await TestPeer.connect(to: .tcp(host: address.host, port: address.port ?? 0))
        defer { third.close() }
        // A configured id is kept by every instance.
        #expect(try await handshake(third)?.serverID == "harness")
        #expect(harness.instancesStarted == 3)

        try await within(.seconds(10), "the harness to stop") { await harness.stop() }
        #expect(!harness.isRunning)
        try await third.waitForClose()
    }

    @Test("without a configured server id, each instance reports its own: a restart shows in Welcome")
    func eachInstanceHasItsOwnServerID() async throws {
        let harness = LongLinkTestServer {
            var router = Router()
            router.register("echo") { payload, _ in payload }
            return router
        }
        try await harness.start()
        let first = try await TestPeer.connect(to: try harness.endpoint)
        let firstID = try #require(try await handshake(first)?.serverID)
        try await harness.restart(.crash)
        try await first.waitForClose()
        let second = try await TestPeer.connect(to: try harness.endpoint)
        defer { second.close() }
        let secondID = try #require(try await handshake(second)?.serverID)
        #expect(firstID != secondID)
        #expect(firstID.hasPrefix(harness.configuration.serverID))
        #expect(secondID == harness.configuration.serverID + "-2")
        try await within(.seconds(10), "the harness to stop") { await harness.stop() }
    }

    @Test("after a crash the port refuses connections until start brings a new instance up on it")
    func crashThenStart() async throws {
        let harness = Self.makeHarness()
        let address = try await harness.start()
        try await within(.seconds(10), "the crash") { await harness.crash() }
        #expect(!harness.isRunning)
        #expect(harness.server == nil)
        let refused = try await closeErrorOfConnection(to: try harness.endpoint)
        #expect(refused?.code == .connectionRefused)

        #expect(try await harness.start() == address)
        let client = try await TestPeer.connect(to: try harness.endpoint)
        defer { client.close() }
        #expect(try await handshake(client) != nil)
        try await within(.seconds(10), "the harness to stop") { await harness.stop() }
    }

    @Test("while down, the harness keeps its port: another server cannot take it before the next start")
    func itsPortStaysItsWhileDown() async throws {
        let harness = Self.makeHarness()
        let address = try await harness.start()
        try await within(.seconds(10), "the crash") { await harness.crash() }
        do {
            let intruder = try await Listener.bind(to: try harness.endpoint, onAccept: { $0.close(.immediately) })
            intruder.close()
            Issue.record("another listener took port \(address.port ?? 0) while the harness was down")
        } catch {
            #expect((error.underlying as? SystemCallError)?.errno == EADDRINUSE)
        }
        #expect(try await harness.start() == address)
        let client = try await TestPeer.connect(to: try harness.endpoint)
        defer { client.close() }
        #expect(try await handshake(client) != nil)
        try await within(.seconds(10), "the harness to stop") { await harness.stop() }
    }

    @Test("through a proxy that splits every write into single bytes, the handshake still works")
    func handshakeThroughSplittingProxy() async throws {
        let harness = Self.makeHarness()
        try await harness.start()
        // One loop for the proxy and the client, so each one-byte write is its own read.
        let group = EventLoopGroup(loopCount: 1, name: "split")
        let proxy = FaultProxy(upstream: try harness.endpoint, group: group)
        try await proxy.start()
        await proxy.splitWrites(into: 1)
        let client = try await TestPeer.connect(to: try proxy.endpoint, on: group.loops[0])
        #expect(try await handshake(client)?.serverID == "harness")
        #expect(client.state.value.reads > 10)
        client.close()
        try await within(.seconds(10), "the proxy to stop") { await proxy.stop() }
        try await within(.seconds(10), "the harness to stop") { await harness.stop() }
        await group.shutdownAndWait()
    }
}
