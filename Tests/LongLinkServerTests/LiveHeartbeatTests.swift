import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

/// A client proposes a new heartbeat interval on a live link (`Ping.heartbeat_ms`): the server answers
/// with the interval it enforces, within its bounds, and its idle timeout follows it. On a manual clock.
@Suite("Live heartbeat change", .sharedMachine)
struct LiveHeartbeatTests {
    private static func configuration(_ clock: ManualClock) -> ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        configuration.minimumHeartbeat = .milliseconds(20)
        configuration.maximumHeartbeat = .seconds(300)
        configuration.partialFrameTimeout = .seconds(3_600)
        return configuration
    }

    /// Proposes `milliseconds` and returns the `Pong`'s answer.
    private static func propose(_ milliseconds: UInt32, on client: FrameClient) async throws -> UInt32? {
        try await client.send(.ping(Frame.Ping(nonce: 7, heartbeatMilliseconds: milliseconds)))
        guard case .pong(let pong) = try await client.nextFrame(), pong.nonce == 7 else { return nil }
        return pong.heartbeatMilliseconds
    }

    /// Advances the clock `step` at a time until the server closes an idle link, at most `limit` steps;
    /// returns the steps taken.
    private static func stepsUntilIdleClosure(
        _ server: LongLinkServer, _ clock: ManualClock, step: Duration, limit: Int
    ) async -> Int {
        var steps = 0
        while server.statistics.idleClosures == 0, steps < limit {
            await clock.advance(by: step)
            steps += 1
        }
        return steps
    }

    @Test("a longer interval: a link silent for under three new intervals stays, one silent for three is closed")
    func longerIntervalMovesTheIdleTimeout() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock)) { server, address in
            let client = try await FrameClient.connect(to: address)
            #expect(try await client.handshake(heartbeatMilliseconds: 100).heartbeatMilliseconds == 100)
            // An ordinary Ping changes nothing and says nothing about the interval.
            #expect(try await Self.propose(0, on: client) == 0)
            #expect(try await Self.propose(1_000, on: client) == 1_000)
            // 2.5 s of silence: 25 of the old intervals (the old timeout was 3 to 4 of them), 2.5 new ones.
            for _ in 0..<25 { await clock.advance(by: .milliseconds(100)) }
            #expect(server.statistics.idleClosures == 0)
            // Three new intervals of silence at least, four at most, counted from the Ping.
            let steps = await Self.stepsUntilIdleClosure(server, clock, step: .milliseconds(100), limit: 40)
            #expect((5...15).contains(steps), "closed \(2_500 + steps * 100) ms after the Ping")
            let frames = try await client.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.last else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .unavailable)
            #expect(goAway.reconnect)
        }
    }

    @Test("a shorter interval: the link is closed after three of the new intervals")
    func shorterIntervalMovesTheIdleTimeout() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock)) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(heartbeatMilliseconds: 10_000)
            #expect(try await Self.propose(100, on: client) == 100)
            let steps = await Self.stepsUntilIdleClosure(server, clock, step: .milliseconds(100), limit: 100)
            #expect((3...5).contains(steps), "closed after \(steps) new intervals")
        }
    }

    @Test("proposals outside the server's bounds are clamped, in the answer and in the timeout")
    func proposalsAreClamped() async throws {
        let clock = ManualClock()
        var configuration = Self.configuration(clock)
        configuration.minimumHeartbeat = .milliseconds(200)
        configuration.maximumHeartbeat = .seconds(2)
        configuration.defaultHeartbeat = .seconds(1)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(heartbeatMilliseconds: 1_000)
            #expect(try await Self.propose(5, on: client) == 200)
            #expect(try await Self.propose(UInt32.max, on: client) == 2_000)
            // The 2 s maximum is the one enforced: closed 6 to 8 s after, not 3 s nor 3 hours.
            let steps = await Self.stepsUntilIdleClosure(server, clock, step: .seconds(1), limit: 20)
            #expect((6...8).contains(steps), "closed after \(steps) s")
        }
    }

    @Test("a malformed proposal gets GoAway INVALID_ARGUMENT; an over-long varint is truncated as uint32; the server serves on")
    func malformedProposals() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock)) { _, address in
            // Field 2 as length-delimited bytes instead of a varint.
            let wrongType = try await FrameClient.connect(to: address)
            _ = try await wrongType.handshake(heartbeatMilliseconds: 1_000)
            let ping: [UInt8] = [0x08, 0x01, 0x12, 0x02, 0xFF, 0xFF]
            try await wrongType.sendRaw([UInt8(ping.count + 2), 0x4A, UInt8(ping.count)] + ping)
            let frames = try await wrongType.framesUntilClosed()
            guard case .goAway(let goAway)? = frames.last else {
                Issue.record("expected GoAway, got \(frames)")
                return
            }
            #expect(goAway.code == .invalidArgument)

            // 2^32 + 1: a uint32 field keeps the low 32 bits (protobuf's rule), 1 ms, clamped to the minimum.
            let wide = try await FrameClient.connect(to: address)
            _ = try await wide.handshake(heartbeatMilliseconds: 1_000)
            let widePing: [UInt8] = [0x08, 0x07, 0x10, 0x81, 0x80, 0x80, 0x80, 0x10]
            try await wide.sendRaw([UInt8(widePing.count + 2), 0x4A, UInt8(widePing.count)] + widePing)
            guard case .pong(let pong) = try await wide.nextFrame() else {
                Issue.record("expected a Pong")
                return
            }
            #expect(pong.heartbeatMilliseconds == 20)
            #expect(try await wide.call("echo", Array("still here".utf8), id: "1").payload == Array("still here".utf8))
        }
    }
}
