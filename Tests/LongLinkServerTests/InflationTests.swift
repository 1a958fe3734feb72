import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

/// Compressed requests cost the server work only once admitted, and only in proportion to what
/// was sent: bombs past the ratio or the connection's budget are answered `RESOURCE_EXHAUSTED`,
/// and the connection stays. (The flood of bombs for an unknown method is in
/// `InflationLoadTests`.)
@Suite("Inflation bounds", .sharedMachine, .serialized)
struct InflationTests {
    /// Zeros deflated at level 9: about 1:1000.
    static func bomb(inflatingTo size: Int) throws -> [UInt8] {
        try #require(PayloadCompressor.deflate([UInt8](repeating: 0, count: size), level: 9))
    }

    /// Bytes of 16 values, which deflate to about 60 %: well within the ratio.
    static func mild(_ size: Int, seed: UInt64 = 1) throws -> (plain: [UInt8], deflated: [UInt8]) {
        var generator = SplitMix64(seed: seed)
        let plain = (0..<size).map { _ in UInt8(65 + generator.next() % 16) }
        return (plain, try #require(PayloadCompressor.deflate(plain)))
    }

    static func compressed(_ id: String, _ method: String, _ payload: [UInt8]) -> Frame {
        var request = Frame.Request(requestID: id, method: method, payload: payload)
        request.compression = 1
        return .request(request)
    }

    /// A client past a `Hello` that offered zlib.
    static func compressingClient(to address: SocketAddress) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        try await client.send(.hello(Frame.Hello(clientID: "bomber", metadata: ["longlink-compression": "zlib"])))
        guard case .welcome(let welcome) = try await client.nextFrame() else {
            throw FrameClient.UnexpectedEvent(event: .closed(nil), expected: "Welcome")
        }
        #expect(welcome.metadata["longlink-compression"] == "zlib")
        return client
    }

    /// A bomb for a slow route that exists is admitted, then refused past the 1:64 ratio: inflating
    /// stops there, the handler never starts, and the connection goes on (compressed requests
    /// within the ratio included).
    @Test func aBombForASlowRouteIsRefusedPastTheRatio() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let client = try await Self.compressingClient(to: address)
            let bomb = try Self.bomb(inflatingTo: 2 << 20)
            try await client.send(Self.compressed("bomb", "hang", bomb))
            let refused = try await client.response()
            #expect(refused.requestID == "bomb")
            #expect(refused.status?.code == .resourceExhausted)
            #expect(refused.status?.message.contains("1:64") == true, "\(refused.status?.message ?? "")")
            let mild = try Self.mild(200_000)
            try await client.send(Self.compressed("mild", "echo", mild.deflated))
            let echoed = try await client.response()
            // The reply comes back compressed too.
            #expect(echoed.requestID == "mild" && echoed.compression == 1)
            #expect(try PayloadCompressor.inflate(echoed.payload, limit: 1 << 20) == mild.plain)
            #expect(try await client.call("echo", bytes("plain"), id: "plain").text == "plain")
            #expect(server.statistics.protocolViolations == 0)
        }
        #expect(probe.events.count == 0)
    }

    /// Requests in flight on a slow route hold their inflated payloads: past the connection's
    /// budget the next one is answered `RESOURCE_EXHAUSTED`, and one answered (here cancelled)
    /// gives its share back.
    @Test func inflatedBytesHeldByRunningHandlersAreBudgeted() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxInflatedBytesPerConnection = 1 << 20
        let probe = Probe()
        try await withServer(configuration, probe: probe) { _, address in
            let client = try await Self.compressingClient(to: address)
            let payload = try Self.mild(256 << 10)
            for index in 1...4 {
                try await client.send(Self.compressed("h\(index)", "hang", payload.deflated))
                #expect(try await probe.events.next(within: .seconds(20), "handler \(index)") == "started h\(index)")
            }
            try await client.send(Self.compressed("h5", "hang", payload.deflated))
            let refused = try await client.response()
            #expect(refused.requestID == "h5" && refused.status?.code == .resourceExhausted)
            #expect(refused.status?.message.contains("inflated bytes") == true, "\(refused.status?.message ?? "")")
            // Plain requests hold nothing inflated.
            #expect(try await client.call("echo", bytes("plain"), id: "plain").text == "plain")
            try await client.send(.cancel(Frame.Cancel(requestID: "h1")))
            #expect(try await probe.events.next(within: .seconds(20), "h1 cancelled") == "cancelled h1")
            try await client.send(Self.compressed("h6", "hang", payload.deflated))
            #expect(try await probe.events.next(within: .seconds(20), "handler 6") == "started h6")
        }
    }
}
