import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("GoAway and shutdown", .sharedMachine)
struct GoAwayTests {
    @Test func kickingAPrincipalSendsGoAwayAndCloses() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "e")
            #expect(try await client.call("login", bytes("eve"), id: "l").text == "welcome")
            let bystander = try await FrameClient.connect(to: address)
            _ = try await bystander.handshake(clientID: "f")
            #expect(server.kick(principal: "eve", reason: "logged in on another device") == 1)
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.first else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .unauthenticated)
            #expect(goAway.reason == "logged in on another device")
            #expect(goAway.reconnect == false)
            #expect(try await bystander.call("echo", bytes("still here"), id: "1").text == "still here")
        }
    }

    /// A kicked session leaves its principal when told to go, not when its socket closes: a
    /// client that neither reads nor closes keeps the socket open (the server lingers), and the
    /// principal is free meanwhile.
    @Test func aKickedSessionThatLingersIsNoLongerItsPrincipals() async throws {
        var configuration = ServerConfiguration.testing
        configuration.connectionOptions.gracefulCloseTimeout = .seconds(60)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "e")
            #expect(try await client.call("login", bytes("eve"), id: "l").text == "welcome")
            await onLoop(client.connection.eventLoop) { client.connection.pauseReading() }
            #expect(server.kick(principal: "eve", reason: "first") == 1)
            try await eventually("the kick to reach the session") {
                server.kick(principal: "eve", reason: "again") == 0
            }
            #expect(server.statistics.openConnections == 1, "the kicked socket lingers")
            await onLoop(client.connection.eventLoop) { client.connection.resumeReading() }
            guard case .goAway(let goAway)? = try await client.framesUntilClosed().first else {
                Issue.record("expected GoAway first")
                return
            }
            #expect(goAway.reason == "first")
        }
    }

    @Test func gracefulShutdownSendsGoAwayAndLetsInFlightRequestsFinish() async throws {
        let probe = Probe()
        let server = LongLinkServer(configuration: .testing, router: probe.router())
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let address = try await server.localAddress
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.request(Frame.Request(requestID: "r", method: "gated")))
            #expect(try await probe.events.next() == "started r")
            server.shutdown()
            guard case .goAway(let goAway) = try await client.nextFrame() else {
                Issue.record("expected GoAway first")
                return
            }
            #expect(goAway.code == .unavailable)
            #expect(goAway.reconnect)
            probe.gate.put(())
            let rest = try await client.framesUntilClosed()
            #expect(
                rest.contains { if case .response(let r) = $0 { r.requestID == "r" && r.status == nil } else { false } }
            )
            try await group.waitForAll()
            #expect(server.statistics.openConnections == 0)
        }
    }

    /// A handler that outlasts the drain after `GoAway`: the connection closes at the drain
    /// timeout by the server's clock, without the reply.
    @Test func aDrainPastItsTimeoutClosesWithoutTheReply() async throws {
        let clock = ManualClock()
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        configuration.drainTimeout = .seconds(5)
        let probe = Probe()
        try await withServer(configuration, probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.request(Frame.Request(requestID: "r", method: "gated")))
            #expect(try await probe.events.next() == "started r")
            server.goAwayAll(reason: "restarting")
            guard case .goAway = try await client.nextFrame() else {
                Issue.record("expected GoAway first")
                return
            }
            // The Pong comes after the drain timer was armed (the same loop, in order).
            try await client.send(.ping(Frame.Ping(nonce: 1)))
            guard case .pong = try await client.nextFrame() else {
                Issue.record("expected the Pong")
                return
            }
            await clock.advance(by: .milliseconds(4_999))
            #expect(server.statistics.openConnections == 1)
            await clock.advance(by: .milliseconds(1))
            // At once, not at a real drain timeout's end.
            let rest = try await client.framesUntilClosed(within: .seconds(2))
            #expect(!rest.contains { if case .response = $0 { true } else { false } })
            probe.gate.put(())
        }
    }

    @Test func cancellingRunShutsDownGracefully() async throws {
        let server = LongLinkServer(configuration: .testing, router: Probe().router())
        let run = Task { try await server.run() }
        let address = try await server.localAddress
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake()
        run.cancel()
        let frames = try await client.framesUntilClosed()
        #expect(frames.contains { if case .goAway = $0 { true } else { false } })
        try await run.value
    }

    @Test func runTwiceIsRefusedAndABadConfigurationIsTyped() async throws {
        var bad = ServerConfiguration.testing
        bad.maxConnections = 0
        let invalid = LongLinkServer(configuration: bad, router: Router())
        await #expect(throws: LongLinkError.self) { try await invalid.run() }
        do {
            _ = try await invalid.localAddress
            Issue.record("localAddress should fail when run() failed")
        } catch let error as LongLinkError {
            #expect(error.code == .invalidConfiguration)
        }

        try await withServer { server, _ in
            do {
                try await server.run()
                Issue.record("a second run() should throw")
            } catch let error as LongLinkError {
                #expect(error.code == .failedPrecondition)
            }
        }
    }

    @Test func aBusyPortIsATypedError() async throws {
        try await withServer { _, address in
            var configuration = ServerConfiguration.testing
            configuration.endpoint = .tcp(host: address.host, port: address.port ?? 0)
            let second = LongLinkServer(configuration: configuration, router: Router())
            await #expect(throws: LongLinkError.self) { try await second.run() }
        }
    }
}
