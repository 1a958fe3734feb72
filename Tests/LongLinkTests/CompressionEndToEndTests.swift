import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

@testable import LongLink

@Suite("Compression between client and server", .sharedMachine)
struct CompressionEndToEndTests {
    /// 64 KiB of quote lines: compresses well, as JSON and protobuf replies of records do.
    private let large = Array(
        (0..<1_700).map { "AAPL,\(189_000 + $0 % 97),\(1_200 + $0 % 13);" }.joined().utf8.prefix(64 << 10))

    private func configuration(_ endpoint: Endpoint, compression: PayloadCompression) -> ClientConfiguration {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.compression = compression
        configuration.login = { session in _ = try await session.request("login", payload: bytes("una")) }
        return configuration
    }

    /// Both ways, through a proxy that counts the bytes: requests, replies and pushes arrive whole,
    /// and far fewer bytes cross the wire than without compression.
    @Test func requestsRepliesAndPushesRoundTripCompressed() async throws {
        var traffic: [Int] = []
        for compression in [PayloadCompression.zlib(), .disabled] {
            let server = try await RunningServer.start(probe: Probe())
            let proxy = FaultProxy(upstream: server.endpoint)
            try await proxy.start()
            let running = RunningClient(configuration(try proxy.endpoint, compression: compression))
            let alerts = running.client.pushes(topic: "alerts")
            try await running.waitUntilConnected()
            #expect(running.client.core.shared.linkCompresses.load(ordering: .relaxed) == compression.isEnabled)
            #expect(try await running.client.request("echo", payload: large) == large)
            #expect(try await running.client.request("echo", payload: large) == large)
            try await server.server.push(to: "una", topic: "alerts", payload: large)
            let push = try await within(.seconds(20), "the large push") {
                var iterator = alerts.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(push?.payload == large)
            let statistics = proxy.statistics
            traffic.append(statistics.bytesForwardedUpstream + statistics.bytesForwardedDownstream)
            await running.stop()
            await proxy.stop()
            try await server.stop()
        }
        // Four large payloads crossed: 256 KiB plain.
        #expect(traffic[1] > 4 * large.count)
        #expect(traffic[0] < traffic[1] / 5, "\(traffic)")
    }

    /// A server that agrees to compression and answers "fine" with [7], "push" with [1] after a
    /// best-effort push of `bomb`, and every other method with `bomb`, all flagged compressed.
    private static func bombServer(_ bomb: [UInt8]) async throws -> ScriptedServer {
        try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello(let hello):
                #expect(hello.metadata["longlink-compression"] == "zlib")
                var welcome = Frame.Welcome(serverID: "scripted")
                welcome.metadata = ["longlink-compression": "zlib"]
                peer.send(.welcome(welcome))
            case .request(let request) where request.method == "push":
                var push = Frame.Push(seq: 0, topic: "alerts", payload: bomb)
                push.compression = 1
                peer.send(.push(push), .response(Frame.Response(requestID: request.requestID, payload: [1])))
            case .request(let request):
                var response = Frame.Response(requestID: request.requestID, payload: bomb)
                response.compression = 1
                if request.method == "fine" { response = Frame.Response(requestID: request.requestID, payload: [7]) }
                peer.send(.response(response))
            default: break
            }
        }
    }

    /// A server that sends a compressed reply inflating past the client's frame limit: that call
    /// fails with compressionFailed, the link stays, and the next call works.
    @Test func aCompressionBombReplyFailsTheCallNotTheLink() async throws {
        let bomb = try #require(PayloadCompressor.deflate([UInt8](repeating: 0, count: 64 << 20), level: 9))
        let server = try await Self.bombServer(bomb)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.compression = .zlib()
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let error = await #expect(throws: LongLinkError.self) { try await running.client.request("bomb") }
        #expect(error?.code == .compressionFailed)
        #expect(try await running.client.request("fine") == [7])
        let statistics = await running.client.statistics
        #expect(statistics.compressionFailures == 1 && statistics.connects == 1)
        await running.stop()
        server.stop()
    }

    /// A hostile server whose compressed reply and push inflate far past 1:64 (but within the
    /// frame limit): each fails with a typed compressionFailed naming the ratio, inflating stops
    /// there, and the link stays.
    @Test func aReplyOrPushPastTheRatioIsATypedError() async throws {
        let bomb = try #require(PayloadCompressor.deflate([UInt8](repeating: 0, count: 2 << 20), level: 9))
        #expect(bomb.count * 64 < 2 << 20)
        let server = try await Self.bombServer(bomb)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.compression = .zlib()
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        // Caught by hand: a failed expectation would print the 2 MiB reply.
        do {
            let reply = try await running.client.request("bomb")
            Issue.record("a reply past the ratio was accepted (\(reply.count) bytes)")
        } catch let error as LongLinkError {
            #expect(error.code == .compressionFailed)
            #expect(error.message.contains("1:64"), "\(error.message)")
        }
        #expect(try await running.client.request("push") == [1])
        let push = try await within(.seconds(20), "the bomb push") {
            var iterator = alerts.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(push?.payload.count == 0 && push?.payloadError?.code == .compressionFailed)
        #expect(try await running.client.request("fine") == [7])
        let statistics = await running.client.statistics
        #expect(statistics.compressionFailures == 2 && statistics.connects == 1)
        await running.stop()
        server.stop()
    }

    /// A server that does not know the extension (no answer in Welcome) gets nothing compressed.
    @Test func withoutTheServersAgreementNothingIsCompressed() async throws {
        let received = Mailbox<Frame.Request>()
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .request(let request):
                received.put(request)
                peer.send(.response(Frame.Response(requestID: request.requestID, payload: [])))
            default: break
            }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.compression = .zlib(minimumBytes: 16)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        for _ in 0..<2 { _ = try await running.client.request("echo", payload: large) }
        for _ in 0..<2 {
            let request = try await received.next()
            #expect(request.compression == 0 && request.payload == large)
        }
        await running.stop()
        server.stop()
    }
}
