import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Hostile input", .sharedMachine)
struct HostileInputTests {
    private func expectGoAway(_ client: FrameClient, code: StatusCode) async throws {
        let frames = try await client.framesUntilClosed()
        guard case .goAway(let goAway)? = frames.last else {
            Issue.record("expected GoAway before close, got \(frames)")
            return
        }
        #expect(goAway.code == code)
    }

    @Test func garbageBytesGetAGoAwayAndTheServerKeepsServing() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            // A length of 5, then a body with wire type 7 (invalid).
            try await client.sendRaw([0x05, 0x0F, 0xFF, 0xFF, 0xFF, 0xFF])
            try await expectGoAway(client, code: .invalidArgument)
            #expect(server.statistics.protocolViolations == 1)

            let healthy = try await FrameClient.connect(to: address)
            _ = try await healthy.handshake(clientID: "healthy")
            #expect(try await healthy.call("echo", bytes("ok"), id: "1").text == "ok")
        }
    }

    @Test func randomGarbageNeverCrashesTheServer() async throws {
        var generator = SystemRandomNumberGenerator()
        try await withServer { server, address in
            for _ in 0..<20 {
                let client = try await FrameClient.connect(to: address)
                let garbage = (0..<256).map { _ in UInt8.random(in: 0...255, using: &generator) }
                try await client.sendRaw(garbage)
                // Either a GoAway and close, or the garbage parsed as a partial frame that waits
                // for the handshake timeout; close from our side in that case.
                client.close()
            }
            let healthy = try await FrameClient.connect(to: address)
            _ = try await healthy.handshake(clientID: "healthy")
            #expect(try await healthy.call("echo", bytes("alive"), id: "1").text == "alive")
            #expect(server.statistics.handlersStarted == 1)
        }
    }

    @Test func aTwoGigabyteLengthPrefixIsRefusedBeforeAnyBody() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            // 2^31 as a varint, and not a single byte of body.
            try await client.sendRaw([0x80, 0x80, 0x80, 0x80, 0x08])
            try await expectGoAway(client, code: .resourceExhausted)
        }
    }

    @Test func aFrameOverTheConfiguredLimitIsRefused() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxFrameBytes = 1_024
        try await withServer(configuration) { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(
                .request(Frame.Request(requestID: "1", method: "echo", payload: [UInt8](repeating: 1, count: 2_000))))
            try await expectGoAway(client, code: .resourceExhausted)
        }
    }

    @Test func halfAFrameThenSilenceIsClosedByTheHeartbeat() async throws {
        let clock = ManualClock()
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        configuration.minimumHeartbeat = .milliseconds(20)
        configuration.partialFrameTimeout = .seconds(3_600)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            let welcome = try await client.handshake(heartbeatMilliseconds: 100)
            #expect(welcome.heartbeatMilliseconds == 100)
            var frame: [UInt8] = []
            Frame.request(Frame.Request(requestID: "1", method: "echo", payload: bytes("half"))).encodeDelimited(
                into: &frame)
            // The Pong says the server read everything before it: the heartbeat is armed, and the
            // half frame comes after.
            try await client.send(.ping(Frame.Ping(nonce: 1)))
            guard case .pong = try await client.nextFrame() else {
                Issue.record("expected the Pong")
                return
            }
            try await client.sendRaw(Array(frame.prefix(frame.count / 2)))
            // The Ping's interval and three silent ones at least (four if the bytes are read after
            // the first tick), one 100 ms interval at a time.
            var intervals = 0
            while server.statistics.idleClosures == 0, intervals < 10 {
                await clock.advance(by: .milliseconds(100))
                intervals += 1
            }
            #expect((4...6).contains(intervals))
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.last else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .unavailable)
            #expect(goAway.reconnect)
            #expect(server.statistics.idleClosures == 1)
            #expect(server.statistics.handlersStarted == 0)
        }
    }

    @Test func aClientThatNeverReadsDoesNotGrowServerMemory() async throws {
        var configuration = ServerConfiguration.testing
        configuration.connectionOptions.writeBufferHighWatermark = 256 << 10
        configuration.connectionOptions.writeBufferLowWatermark = 64 << 10
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address, readingPaused: true)
            try await client.send(.hello(Frame.Hello(clientID: "sloth")))
            // Each request asks for a 64 KiB reply; the client never reads any of them.
            let total = 50_000
            let sender = Task {
                var sent = 0
                for n in 0..<total {
                    var frame: [UInt8] = []
                    Frame.request(Frame.Request(requestID: "\(n)", method: "big", payload: bytes("65536")))
                        .encodeDelimited(into: &frame)
                    do { try await client.sendRaw(frame) } catch { break }
                    sent += 1
                }
                return sent
            }
            // The server stops reading once its write buffer is over the mark.
            try await eventually("the server pauses reading") { server.statistics.readPauses >= 1 }
            let received = server.statistics.requestsReceived
            print("server took \(received) of \(total) requests before it stopped reading")
            // The server did not take (and queue 64 KiB replies for) all 20,000 requests. What it
            // holds is bounded by the in-flight limit times the reply size plus the watermark.
            // What it took is bounded by what can be in flight, plus the small refusals that fit under
            // the write buffer's watermark, plus one read's worth of request frames (about 25 bytes each).
            let bound =
                configuration.maxInFlightPerConnection + configuration.connectionOptions.writeBufferHighWatermark / 32
                + (64 << 10) / 20
            #expect(received <= bound)
            #expect(received < total / 4)
            client.close()
            sender.cancel()
            _ = await sender.value
        }
    }
}
