import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

/// Input that is well formed but costs the server time or memory: a frame that trickles in, and
/// frames with huge repeated fields. And the empty frame, which costs nothing.
@Suite("Slow and large input", .sharedMachine)
struct SlowAndLargeInputTests {
    private func goAwayBeforeClose(_ close: FrameClient) async throws -> Frame.GoAway? {
        let frames = try await close.framesUntilClosed(within: .seconds(10))
        guard case .goAway(let goAway)? = frames.last else { return nil }
        return goAway
    }

    @Test func aFrameThatTricklesInIsCutOffAtThePartialFrameDeadline() async throws {
        var configuration = ServerConfiguration.testing
        configuration.partialFrameTimeout = .milliseconds(300)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            // A frame announcing 100 bytes, sent one byte at a time: each byte is life, none
            // completes the frame.
            try await client.sendRaw([100])
            let trickle = Task {
                for _ in 0..<99 {
                    try await Task.sleep(for: .milliseconds(100))
                    try await client.sendRaw([0x00])
                }
            }
            defer { trickle.cancel() }
            let started = ContinuousClock.now
            let frames = try await client.framesUntilClosed(within: .seconds(15))
            // Cut off near the 300 ms deadline, long before the trickle (10 s) would complete the frame.
            #expect(ContinuousClock.now - started < .seconds(6))
            try await eventually("the closure is counted") { server.statistics.idleClosures == 1 }
            // The GoAway says why, when it arrives: a byte the client trickles in after the server
            // closed makes the server's kernel reset the connection, and a reset can discard the
            // GoAway still unread in the client's receive buffer.
            if case .goAway(let goAway)? = frames.last {
                #expect(goAway.code == .deadlineExceeded)
                #expect(goAway.reason.contains("partial frame"))
                #expect(goAway.reconnect)
            }
        }
    }

    @Test func anEmptyFrameBeforeHelloIsIgnored() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            try await client.sendRaw([0x00])
            let welcome = try await client.handshake()
            #expect(welcome.serverID == "test-server")
            try await client.sendRaw([0x00])
            #expect(try await client.call("echo", bytes("ok"), id: "1").text == "ok")
        }
    }

    @Test func aHelloWithTooManyMetadataEntriesIsRefused() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxMetadataEntries = 64
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            var metadata: [String: String] = [:]
            for index in 0..<65 { metadata["k\(index)"] = "v" }
            try await client.send(.hello(Frame.Hello(clientID: "c", metadata: metadata)))
            let goAway = try await goAwayBeforeClose(client)
            #expect(goAway?.code == .resourceExhausted)
            #expect(server.statistics.protocolViolations == 1)

            // At the limit is fine, in Hello and in a request.
            let fine = try await FrameClient.connect(to: address)
            metadata["k64"] = nil
            try await fine.send(.hello(Frame.Hello(clientID: "c", metadata: metadata)))
            guard case .welcome = try await fine.nextFrame() else {
                Issue.record("expected Welcome")
                return
            }
            try await fine.send(.request(Frame.Request(requestID: "1", method: "echo", metadata: metadata)))
            #expect(try await fine.response().requestID == "1")
            metadata["k64"] = "v"
            try await fine.send(.request(Frame.Request(requestID: "2", method: "echo", metadata: metadata)))
            #expect(try await goAwayBeforeClose(fine)?.code == .resourceExhausted)
        }
    }

    /// A few entries of many bytes: past `maxMetadataBytes` (64 KiB by default) the frame is
    /// refused while it is decoded.
    @Test func aHelloWithTooManyMetadataBytesIsRefused() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            let large = String(repeating: "x", count: 40 << 10)
            try await client.send(.hello(Frame.Hello(clientID: "c", metadata: ["a": large, "b": large])))
            let goAway = try await goAwayBeforeClose(client)
            #expect(goAway?.code == .resourceExhausted)
            #expect(server.statistics.protocolViolations == 1)
            let fine = try await FrameClient.connect(to: address)
            try await fine.send(.hello(Frame.Hello(clientID: "c", metadata: ["a": large])))
            guard case .welcome = try await fine.nextFrame() else {
                Issue.record("expected Welcome")
                return
            }
        }
    }

    @Test func anAckWithTooManySeqsIsRefused() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxAckSeqs = 1_000
        try await withServer(configuration) { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.ack(Frame.Ack(seqs: Array(1...1_000))))
            try await client.send(.ping(Frame.Ping(nonce: 1)))
            guard case .pong = try await client.nextFrame() else {
                Issue.record("expected Pong")
                return
            }
            try await client.send(.ack(Frame.Ack(seqs: Array(1...1_001))))
            #expect(try await goAwayBeforeClose(client)?.code == .resourceExhausted)
        }
    }
}
