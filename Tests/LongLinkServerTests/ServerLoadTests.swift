import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// The load a server reports in `Welcome` and every `Pong`, by the documented formula.
@Suite("Server load", .sharedMachine)
struct ServerLoadTests {
    private func pongLoad(_ client: FrameClient, nonce: UInt64) async throws -> UInt32? {
        try await client.send(.ping(Frame.Ping(nonce: nonce)))
        while true {
            guard case .pong(let pong) = try await client.nextFrame() else { continue }
            if pong.nonce == nonce { return pong.loadPermille }
        }
    }

    /// An application's own figure is sent as it is, capped at 1000.
    @Test func anApplicationsOwnFigureIsReported() async throws {
        var configuration = ServerConfiguration.testing
        configuration.loadReporter = { 777 }
        try await withServer(configuration) { _, address in
            let client = try await FrameClient.connect(to: address)
            #expect(try await client.handshake().loadPermille == 777)
            #expect(try await pongLoad(client, nonce: 1) == 777)
        }
        configuration.loadReporter = { 5_000 }
        try await withServer(configuration) { _, address in
            let client = try await FrameClient.connect(to: address)
            #expect(try await client.handshake().loadPermille == 1000)
        }
    }

    /// Four of eight connections open: at least half loaded.
    @Test func openConnectionsCountAsAShareOfTheMaximum() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxConnections = 8
        try await withServer(configuration) { server, address in
            var clients: [FrameClient] = []
            for _ in 0..<3 {
                let client = try await FrameClient.connect(to: address)
                _ = try await client.handshake()
                clients.append(client)
            }
            let fourth = try await FrameClient.connect(to: address)
            try await eventually("four connections") { server.statistics.openConnections == 4 }
            #expect(try await fourth.handshake().loadPermille >= 500)
        }
    }

    /// One handler running of two at full load: half loaded; and the share falls when it ends.
    @Test func runningHandlersCountAsAShareOfFullLoad() async throws {
        var configuration = ServerConfiguration.testing
        configuration.handlersAtFullLoad = 2
        let probe = Probe()
        try await withServer(configuration, probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.request(Frame.Request(requestID: "g", method: "gated")))
            #expect(try await probe.events.next() == "started g")
            #expect(try await pongLoad(client, nonce: 7)! >= 500)
            probe.gate.put(())
            _ = try await client.response()
            try await eventually("the handler ended") { server.statistics.handlersRunning == 0 }
        }
    }

    /// The busy share is the busiest loop's growth in busy time over the window, recomputed at most
    /// once a window.
    @Test func theLoopBusyShareIsTheBusiestLoopsOverTheWindow() {
        let start = ContinuousClock.now
        var gauge = LoadGauge(window: .seconds(1))
        #expect(gauge.sample(busy: [.zero, .zero], at: start) == 0)
        // Half a second busy on the second loop within the second: 0.5.
        let half = gauge.sample(
            busy: [.milliseconds(100), .milliseconds(500)], at: start.advanced(by: .seconds(1)))
        #expect(abs(half - 0.5) < 1e-9)
        // Within the next window: the last share, unchanged.
        #expect(gauge.sample(busy: [.seconds(5), .seconds(5)], at: start.advanced(by: .milliseconds(1_500))) == half)
        // Over the next full window (1 s), the first loop was busy all along.
        let full = gauge.sample(busy: [.milliseconds(1_100), .milliseconds(600)], at: start.advanced(by: .seconds(2)))
        #expect(full == 1)
    }
}
