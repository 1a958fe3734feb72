import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Handshake", .sharedMachine)
struct HandshakeTests {
    @Test func welcomeCarriesTheNegotiatedValues() async throws {
        var configuration = ServerConfiguration.testing
        configuration.minimumHeartbeat = .milliseconds(500)
        configuration.dedupeWindow = .seconds(30)
        configuration.maxFrameBytes = 65_536
        try await withServer(configuration) { _, address in
            let client = try await FrameClient.connect(to: address)
            let welcome = try await client.handshake(heartbeatMilliseconds: 10)
            #expect(welcome.version == 1)
            #expect(welcome.serverID == "test-server")
            #expect(welcome.heartbeatMilliseconds == 500)  // clamped up to the minimum
            #expect(welcome.maxFrameBytes == 65_536)
            #expect(welcome.dedupeWindowMilliseconds == 30_000)
            #expect(welcome.loadPermille <= 1000)

            let other = try await FrameClient.connect(to: address)
            let defaulted = try await other.handshake(heartbeatMilliseconds: 0)
            #expect(defaulted.heartbeatMilliseconds == 15_000)
        }
    }

    @Test func aRequestBeforeHelloIsAViolation() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            try await client.send(.request(Frame.Request(requestID: "1", method: "echo")))
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.first else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .invalidArgument)
            #expect(goAway.reason.contains("Hello"))
            #expect(server.statistics.protocolViolations == 1)
            #expect(server.statistics.handlersStarted == 0)
        }
    }

    @Test func anUnsupportedVersionIsRefusedForGood() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            try await client.send(.hello(Frame.Hello(version: 2, clientID: "c")))
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.first else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .failedPrecondition)
            #expect(goAway.reconnect == false)
        }
    }

    @Test(arguments: ["", String(repeating: "x", count: 129)])
    func aClientIDOutsideOneTo128BytesIsRefused(clientID: String) async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            try await client.send(.hello(Frame.Hello(clientID: clientID)))
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.first else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .invalidArgument)
        }
    }

    @Test func aSecondHelloIsAViolation() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.hello(Frame.Hello(clientID: "again")))
            let frames = try await client.framesUntilClosed()
            #expect(frames.contains { if case .goAway(let g) = $0 { g.code == .invalidArgument } else { false } })
            #expect(server.statistics.protocolViolations == 1)
        }
    }

    @Test func serverOnlyFramesFromAClientAreViolations() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.push(Frame.Push(seq: 1, topic: "t", payload: [1])))
            let frames = try await client.framesUntilClosed()
            #expect(frames.contains { if case .goAway = $0 { true } else { false } })
        }
    }

    @Test func noHelloWithinTheHandshakeTimeoutCloses() async throws {
        let clock = ManualClock()
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        configuration.handshakeTimeout = .seconds(10)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            try await eventually("the handshake timer is armed") { clock.scheduledCount == 1 }
            await clock.advance(by: .seconds(9))
            #expect(server.statistics.openConnections == 1)
            await clock.advance(by: .seconds(1))
            let frames = try await client.framesUntilClosed(within: .seconds(5))
            #expect(frames.contains { if case .goAway = $0 { true } else { false } })
        }
    }

    @Test func theConnectionLimitTurnsExtraClientsAway() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxConnections = 2
        try await withServer(configuration) { server, address in
            let first = try await FrameClient.connect(to: address)
            _ = try await first.handshake(clientID: "a")
            let second = try await FrameClient.connect(to: address)
            _ = try await second.handshake(clientID: "b")
            let third = try await FrameClient.connect(to: address)
            let frames = try await third.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.first else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .resourceExhausted)
            #expect(goAway.reconnect)
            #expect(goAway.retryAfterMilliseconds > 0)
            #expect(server.statistics.rejectedConnections == 1)
            // The admitted ones still work.
            #expect(try await first.call("echo", bytes("hi"), id: "1").text == "hi")
        }
    }
}
