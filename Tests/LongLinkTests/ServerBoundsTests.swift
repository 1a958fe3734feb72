import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

@testable import LongLink

/// What a client does with values a server supplies that it must not trust as they are.
@Suite("Server-supplied values are bounded", .sharedMachine)
struct ServerBoundsTests {
    @Test func theBoundsWidenToIncludeTheClientsOwnProposal() {
        #expect(ServerBounds.heartbeat(offered: 0, proposed: .seconds(15)) == .seconds(15))
        #expect(ServerBounds.heartbeat(offered: 1, proposed: .seconds(15)) == .seconds(1))
        #expect(ServerBounds.heartbeat(offered: 1, proposed: .milliseconds(50)) == .milliseconds(50))
        #expect(ServerBounds.heartbeat(offered: 5_000, proposed: .seconds(15)) == .seconds(5))
        // Never longer than the proposal.
        #expect(ServerBounds.heartbeat(offered: .max, proposed: .seconds(15)) == .seconds(15))
        #expect(ServerBounds.heartbeat(offered: .max, proposed: .seconds(900)) == .seconds(900))
        #expect(ServerBounds.heartbeat(offered: 20_000, proposed: .seconds(15)) == .seconds(15))
        // No proposal: the server's value, within 1 s ... 300 s.
        #expect(ServerBounds.heartbeat(offered: .max, proposed: .zero) == .seconds(300))
        #expect(ServerBounds.heartbeat(offered: 20_000, proposed: .zero) == .seconds(20))
        #expect(ServerBounds.retryAfter(milliseconds: .max) == .seconds(300))
        #expect(ServerBounds.retryAfter(milliseconds: 1_500) == .milliseconds(1_500))
        #expect(ServerBounds.maxFrameBytes(offered: 0) == Frame.defaultMaxFrameBytes)
        #expect(ServerBounds.maxFrameBytes(offered: 1) == 1_024)
    }

    /// A script that welcomes with `heartbeatMilliseconds` and answers every Ping (or, when
    /// `answersPings` is false, never says another word).
    private func server(heartbeatMilliseconds: UInt32, answersPings: Bool) async throws -> ScriptedServer {
        try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome(heartbeatMilliseconds: heartbeatMilliseconds)
            case .ping(let ping) where answersPings: peer.send(.pong(Frame.Pong(nonce: ping.nonce)))
            default: break
            }
        }
    }

    /// `heartbeat_ms` 1 would have the client ping every half millisecond and, with no answer
    /// inside 2 ms, call the link dead: with the floor it waits a second.
    @Test func aOneMillisecondHeartbeatIsRaisedToTheFloor() async throws {
        let clock = ManualClock()
        let server = try await server(heartbeatMilliseconds: 1, answersPings: true)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clock = clock
        configuration.heartbeat = .seconds(15)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        await clock.advance(by: .milliseconds(900))
        #expect(await running.client.statistics.deadLinks == 0)
        #expect(await running.client.statistics.connects == 1)
        await running.stop()
        server.stop()
    }

    /// `heartbeat_ms` 2^32-1 (49 days) would switch dead-link detection off, and a ceiling of
    /// minutes would still be the server's choice: the server may shorten the client's proposal,
    /// never lengthen it, so a server that falls silent is found within two and a quarter of the
    /// client's own 15 s intervals.
    @Test func aServerCannotLengthenTheHeartbeatPastTheProposal() async throws {
        let clock = ManualClock()
        let server = try await server(heartbeatMilliseconds: .max, answersPings: false)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clock = clock
        configuration.heartbeat = .seconds(15)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        // Two quiet intervals after the first tick (which still counts the Welcome as heard).
        #expect(await running.client.core.serverInfo?.heartbeat == .seconds(15))
        await clock.advance(by: .seconds(15) * 2.25)
        try await eventually("the silent link is declared dead") {
            await running.client.statistics.deadLinks >= 1
        }
        await running.stop()
        server.stop()
    }

    /// A `GoAway` asking the client to stay away for 49 days: it comes back after at most 300 s
    /// (plus the first backoff step of jitter).
    @Test func aRetryAfterOfWeeksIsCappedAtFiveMinutes() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            guard case .hello = frame else { return }
            peer.welcome()
            peer.send(
                .goAway(
                    Frame.GoAway(
                        code: .unavailable, reason: "maintenance", reconnect: true, retryAfterMilliseconds: .max)))
        }
        let running = RunningClient(.forTests(server.endpoint))
        let states = running.client.connectionStates
        let delay = try await within(.seconds(20), "the client to wait before reconnecting") {
            for await state in states where state.phase == .waitingToReconnect { return state.retryDelay }
            return nil
        }
        let bound = ServerBounds.retryAfterCeiling + .milliseconds(20)
        #expect(delay != nil && delay! >= .seconds(300) && delay! <= bound)
        await running.stop()
        server.stop()
    }

    /// A request larger than the server's `max_frame_bytes` fails at once with a typed error: sent,
    /// it would make the server close the link, and each resend would do it again.
    @Test func aRequestOverTheServersFrameLimitFailsWithoutCostingTheLink() async throws {
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.maxFrameBytes = 2_048
        let server = try await RunningServer.start(serverConfiguration, probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.defaultTimeout = .seconds(5)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        do {
            _ = try await running.client.request("echo", payload: [UInt8](repeating: 7, count: 4_000))
            Issue.record("an oversized request must fail")
        } catch let error as LongLinkError {
            #expect(error.code == .resourceExhausted)
        }
        #expect(try await running.client.request("echo", payload: bytes("small")) == bytes("small"))
        #expect(await running.client.statistics.connects == 1)
        await running.stop()
        try await server.stop()
    }
    /// A handler's reply larger than clients read comes back as RESOURCE_EXHAUSTED: sent, it would
    /// make the client drop the link, resend, and receive it again until the deadline.
    @Test func aReplyLargerThanTheClientReadsComesBackAsAnError() async throws {
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.maxOutgoingFrameBytes = 1_024
        let server = try await RunningServer.start(serverConfiguration, probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.maxFrameBytes = 1_024
        configuration.defaultTimeout = .seconds(5)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        do {
            _ = try await running.client.request("echo", payload: [UInt8](repeating: 7, count: 1_500))
            Issue.record("a reply over the limit must fail")
        } catch let error as LongLinkError {
            #expect(error.code == .resourceExhausted && error.isRemote)
        }
        #expect(try await running.client.request("echo", payload: bytes("small")) == bytes("small"))
        #expect(await running.client.statistics.connects == 1)
        await running.stop()
        try await server.stop()
    }
}
