import LongLink
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Synchronization
import Testing

/// Whole sessions with a server that misbehaves on purpose: each test bounds the client's memory,
/// checks the typed error it reports, that it backs off, and that no caller waits past its deadline.
@Suite("A hostile server, session by session", .sharedMachine)
struct HostileSessionTests {
    /// How long a call that must fail at its deadline may take, at most: its timeout plus slack for
    /// a loaded machine (ThreadSanitizer runs these too).
    private static let slack = Duration.seconds(5)

    /// Runs `call` and returns its error code and how long it took.
    private func timed(_ call: @Sendable () async throws -> [UInt8]) async -> (LongLinkError.Code?, Duration) {
        let start = ContinuousClock.now
        do {
            _ = try await call()
            return (nil, ContinuousClock.now - start)
        } catch let error as LongLinkError {
            return (error.code, ContinuousClock.now - start)
        } catch {
            return (nil, ContinuousClock.now - start)
        }
    }

    @Test func aServerThatNeverWelcomesIsRetriedWithBackoffAndCallsEndAtTheirDeadline() async throws {
        let connections = Atomic<Int>(0)
        let server = try await ScriptedServer.start { frame, _ in
            if case .hello = frame { connections.add(1, ordering: .relaxed) }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.connectTimeout = .milliseconds(200)
        let running = RunningClient(configuration)
        let states = running.client.connectionStates
        let client = running.client
        let (code, took) = await timed {
            try await client.request("echo", options: RequestOptions(timeout: .seconds(1)))
        }
        #expect(code == .deadlineExceeded)
        #expect(took >= .seconds(1) && took < .seconds(1) + Self.slack)
        let (error, delay) = try await within(.seconds(20), "the handshake's error and the wait after it") {
            var error: LongLinkError.Code?
            for await state in states {
                if let code = state.error?.code { error = code }
                if error != nil, state.phase == .waitingToReconnect, let delay = state.retryDelay {
                    return (error, delay)
                }
            }
            return (error, Duration.zero)
        }
        #expect(error == .connectTimeout)
        #expect(delay > .zero && delay <= .milliseconds(200))
        // At most one attempt per connect timeout plus backoff: a handful in a second, not a storm.
        #expect(connections.load(ordering: .relaxed) <= 8)
        await running.stop()
        server.stop()
    }

    @Test func aServerThatClosesAfterEveryWelcomeIsRetriedWithBackoff() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            guard case .hello = frame else { return }
            peer.welcome()
            let connection = peer.connection
            connection.eventLoop.execute { connection.close(.graceful) }
        }
        let running = RunningClient(.forTests(server.endpoint))
        let states = running.client.connectionStates
        let client = running.client
        let (code, took) = await timed {
            try await client.request("echo", options: RequestOptions(timeout: .seconds(1)))
        }
        // Written on a link that then dropped, to a server that does not de-duplicate: its outcome is
        // unknown (connectionLost); or it never found a link open long enough (deadlineExceeded).
        #expect(code == .connectionLost || code == .deadlineExceeded)
        #expect(took < .seconds(1) + Self.slack)
        let delays = try await within(.seconds(20), "three waits before reconnecting") {
            var delays: [Duration] = []
            for await state in states {
                if state.phase == .waitingToReconnect, let delay = state.retryDelay { delays.append(delay) }
                if delays.count == 3 { break }
            }
            return delays
        }
        // The forTests backoff: 20 ms doubling to at most 200 ms, with jitter: a wait before every
        // attempt (never a hot loop), never more than the cap.
        #expect(delays.allSatisfy { $0 > .zero && $0 <= .milliseconds(200) })
        await running.stop()
        server.stop()
    }

    @Test func aServerThatReplaysOneSeqForeverDeliversItOnce() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .sync:
                let old = Frame.push(Frame.Push(seq: 1, topic: "alerts", payload: [1], epoch: 9))
                for _ in 0..<500 { peer.send(old) }
                peer.send(.push(Frame.Push(seq: 2, topic: "alerts", payload: [2], epoch: 9)))
            default: break
            }
        }
        let running = RunningClient(.forTests(server.endpoint))
        let alerts = running.client.pushes(topic: "alerts")
        let seqs = try await within(.seconds(20), "two pushes") {
            var seqs: [UInt64] = []
            for await push in alerts {
                seqs.append(push.seq)
                if seqs.count == 2 { break }
            }
            return seqs
        }
        #expect(seqs == [1, 2])
        try await eventually("every repeat dropped") {
            await running.client.statistics.duplicatePushesDropped == 499
        }
        await running.stop()
        server.stop()
    }

    @Test func aServerThatFloodsPushesAndReadsNoAcksCostsAtMostTheBuffer() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .sync:
                peer.connection.pauseReading()
                var bytes: [UInt8] = []
                for seq in UInt64(1)...50_000 {
                    Frame.push(Frame.Push(seq: seq, topic: "alerts", payload: [0], epoch: 3)).encodeDelimited(
                        into: &bytes)
                }
                peer.sendRaw(bytes)
            default: break
            }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.pushBufferLimit = 1_000
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        try await eventually("the flood has arrived") { await running.client.statistics.pushesReceived == 50_000 }
        // Nobody took any: the consumer's buffer holds its limit, the rest stay with the server.
        #expect(await running.client.statistics.reliablePushesDeferred == 49_000)
        let seqs = try await within(.seconds(20), "the buffered pushes") {
            var seqs: [UInt64] = []
            var iterator = alerts.makeAsyncIterator()
            for _ in 0..<1_000 { seqs.append(await iterator.next()?.seq ?? 0) }
            return seqs
        }
        #expect(seqs == Array(1...1_000))
        #expect(await running.client.statistics.writeBufferBytes <= 1 << 20)
        await running.stop()
        server.stop()
    }

    @Test func aServerThatAnswersByteByByteIsWaitedForOnlyUntilTheDeadline() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .request(let request):
                var bytes: [UInt8] = []
                Frame.response(Frame.Response(requestID: request.requestID, payload: request.payload))
                    .encodeDelimited(into: &bytes)
                let pause: Duration = request.method == "slow" ? .milliseconds(100) : .milliseconds(2)
                Task {
                    for byte in bytes {
                        try? await Task.sleep(for: pause)
                        peer.sendRaw([byte])
                    }
                }
            default: break
            }
        }
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        let client = running.client
        #expect(try await client.request("trickle", payload: bytes("hello")) == bytes("hello"))
        let (code, took) = await timed {
            try await client.request(
                "slow", payload: bytes("hello"), options: RequestOptions(timeout: .milliseconds(300)))
        }
        #expect(code == .deadlineExceeded)
        #expect(took < .milliseconds(300) + Self.slack)
        await running.stop()
        server.stop()
    }
}
