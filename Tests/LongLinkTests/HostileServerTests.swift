import LongLink
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Synchronization
import Testing

@Suite("A server that misbehaves", .sharedMachine)
struct HostileServerTests {
    @Test func lateDuplicateAndUnknownRepliesAreDroppedAndCounted() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello: peer.welcome()
            case .request(let request) where request.method == "echo":
                let reply = Frame.response(Frame.Response(requestID: request.requestID, payload: request.payload))
                // The same reply twice, and one for an id nobody sent.
                peer.send(reply, reply, .response(Frame.Response(requestID: "999", payload: [1])))
                peer.send(.response(Frame.Response(requestID: "not-a-number", payload: [2])))
            default: break
            }
        }
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        #expect(try await running.client.request("echo", payload: bytes("one")) == bytes("one"))
        #expect(try await running.client.request("echo", payload: bytes("two")) == bytes("two"))
        try await eventually("the stray replies are counted") { await running.client.statistics.unknownReplies == 6 }
        await running.stop()
        server.stop()
    }

    @Test func aReplyAfterTheDeadlineIsIgnored() async throws {
        let held = Mailbox<Frame.Request>()
        let server = try await ScriptedServer.holdingRequests(in: held)
        let clock = ManualClock()
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clock = clock
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let peer = try await server.nextPeer()
        let client = running.client
        let call = Task { try await client.request("slow", options: RequestOptions(timeout: .seconds(1))) }
        let request = try await held.next()
        await clock.advance(by: .seconds(2))
        do {
            _ = try await call.value
            Issue.record("expected a deadline error")
        } catch let error as LongLinkError {
            #expect(error.code == .deadlineExceeded)
        }
        // The request carried its budget, so the client sends no Cancel: the next frame after it
        // is the request made after the deadline error (frames leave in order).
        #expect(request.timeoutMilliseconds == 1_000)
        let next = Task { try await client.request("next", options: RequestOptions(timeout: .seconds(1))) }
        var following: [String] = []
        while following.last != "next" {
            switch try await peer.received.next() {
            case .request(let request): following.append(request.method)
            case .cancel(let cancel): following.append("cancel \(cancel.requestID)")
            default: break
            }
        }
        #expect(following == ["slow", "next"])
        next.cancel()
        peer.send(.response(Frame.Response(requestID: request.requestID, payload: bytes("too late"))))
        try await eventually("the late reply is counted") { await running.client.statistics.unknownReplies == 1 }
        await running.stop()
        server.stop()
    }

    @Test func aMalformedFrameEndsTheLinkAndTheClientReconnects() async throws {
        let connections = Mailbox<Int>()
        let server = try await ScriptedServer.start { frame, peer in
            guard case .hello = frame else { return }
            peer.welcome()
            connections.put(1)
            // Garbage: a length of 3 and a field with wire type 7.
            peer.sendRaw([0x03, 0x0F, 0x00, 0x00])
        }
        let running = RunningClient(.forTests(server.endpoint))
        _ = try await connections.next()
        _ = try await connections.next()  // it came back
        try await eventually("a second link") { await running.client.statistics.connects >= 2 }
        await running.stop()
        server.stop()
    }

    /// A Welcome with more metadata than a client reads (129 entries, or 64 KiB): a protocol
    /// violation, reported as such, and the client tries again.
    @Test func aWelcomeWithTooMuchMetadataIsAViolation() async throws {
        for metadata in [
            Dictionary(uniqueKeysWithValues: (0..<129).map { ("k\($0)", "v") }),
            ["large": String(repeating: "x", count: (64 << 10) + 1)],
        ] {
            let server = try await ScriptedServer.start { frame, peer in
                guard case .hello = frame else { return }
                var welcome = Frame.Welcome(serverID: "hostile")
                welcome.metadata = metadata
                peer.send(.welcome(welcome))
            }
            let running = RunningClient(.forTests(server.endpoint))
            let states = running.client.connectionStates
            let error = try await within(.seconds(20), "a violation") {
                for await state in states where state.error != nil { return state.error }
                return nil
            }
            #expect(error?.code == .protocolViolation)
            #expect(error?.message.contains("tooManyElements") == true, "\(error?.message ?? "")")
            await running.stop()
            server.stop()
        }
    }

    @Test func aServerThatNeverAnswersHelloTimesOutTheHandshake() async throws {
        let server = try await ScriptedServer.start { _, _ in }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.connectTimeout = .milliseconds(100)
        let running = RunningClient(configuration)
        let states = running.client.connectionStates
        let sawTimeout = try await within(.seconds(20), "a handshake timeout") {
            for await state in states where state.error?.code == .connectTimeout { return true }
            return false
        }
        #expect(sawTimeout)
        await running.stop()
        server.stop()
    }

    @Test func silenceIsDetectedWithinTwoHeartbeats() async throws {
        let clock = ManualClock()
        let server = try await ScriptedServer.start { frame, peer in
            // Welcome, then never a word: no Pong, no traffic. A black hole.
            if case .hello = frame { peer.welcome(heartbeatMilliseconds: 1_000) }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clock = clock
        configuration.heartbeat = .seconds(1)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let peer = try await server.nextPeer()
        await clock.advance(by: .milliseconds(1_750))
        #expect(await running.client.statistics.deadLinks == 0)
        // A Ping went out after one quiet interval.
        var pinged = false
        while !pinged {
            if case .ping = try await peer.received.next() { pinged = true }
        }
        await clock.advance(by: .milliseconds(500))
        try await eventually("the link is declared dead") { await running.client.statistics.deadLinks == 1 }
        await running.stop()
        server.stop()
    }

    /// A server that says GoAway while a call is in flight and then neither answers nor closes:
    /// once that call has timed out, the client closes the link itself and comes back, instead of
    /// holding a link whose gate is shut for good.
    @Test func aServerThatNeverClosesAfterGoAwayIsLeftOnceItsCallsEnd() async throws {
        let connections = Atomic<Int>(0)
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello:
                connections.add(1, ordering: .relaxed)
                peer.welcome()
            case .request(let request) where request.method == "stuck":
                peer.send(.goAway(Frame.GoAway(code: .unavailable, reason: "draining", reconnect: true)))
            case .request(let request):
                peer.send(.response(Frame.Response(requestID: request.requestID, payload: request.payload)))
            default: break
            }
        }
        let running = RunningClient(.forTests(server.endpoint))
        try await running.waitUntilConnected()
        do {
            _ = try await running.client.request("stuck", options: RequestOptions(timeout: .milliseconds(300)))
            Issue.record("the unanswered call must time out")
        } catch let error as LongLinkError {
            #expect(error.code == .deadlineExceeded)
        }
        // The client leaves the draining link by itself (the server never closes it) and comes back.
        try await eventually("a second connection") { connections.load(ordering: .relaxed) == 2 }
        let reply = try await running.client.request("echo", payload: bytes("after"))
        #expect(reply == bytes("after"))
        await running.stop()
        server.stop()
    }

    /// A server that stops reading: the client's write buffer stays near its high watermark (1 MiB)
    /// and the rest wait in the offline queue up to its byte bound; past it, calls fail at once with
    /// resourceExhausted, and the others at their deadline. Nothing grows with what the app sends.
    @Test func aServerThatStopsReadingLeavesTheClientsMemoryBounded() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            guard case .hello = frame else { return }
            peer.welcome()
            peer.connection.pauseReading()
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.offlineQueueBytes = 4 << 20
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        let payload = [UInt8](repeating: 1, count: 64 << 10)
        // 25 MiB in all: more than the kernel's socket buffers, the write buffer and the queue hold.
        let calls = (0..<400).map { _ in
            Task { () -> LongLinkError.Code? in
                do {
                    _ = try await client.request(
                        "sink", payload: payload, options: RequestOptions(timeout: .seconds(3)))
                    return nil
                } catch let error as LongLinkError {
                    return error.code
                }
            }
        }
        try await eventually("the offline queue fills") { await client.statistics.queuedBytes >= 3 << 20 }
        let statistics = await client.statistics
        #expect(statistics.writeBufferBytes <= (1 << 20) + (64 << 10) + 1_024)
        #expect(statistics.queuedBytes <= 4 << 20)
        var codes: [LongLinkError.Code?] = []
        for call in calls { codes.append(try await call.value) }
        #expect(codes.contains(.resourceExhausted))
        #expect(codes.allSatisfy { $0 == .resourceExhausted || $0 == .deadlineExceeded })
        await running.stop()
        server.stop()
    }

    /// A server's words reach the app's log bounded: a GoAway reason with a terminal escape, a
    /// forged second line and 5,000 more characters is logged escaped and cut.
    @Test func aHostileReasonIsLoggedEscapedAndCut() async throws {
        let reason = "\u{1b}[2J wiped\n[critical] forged line " + String(repeating: "x", count: 5_000)
        let server = try await ScriptedServer.start { frame, peer in
            guard case .hello = frame else { return }
            peer.welcome()
            peer.send(.goAway(Frame.GoAway(code: .unavailable, reason: reason, reconnect: true)))
        }
        let records = Mailbox<LogRecord>()
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.logger = { records.put($0) }
        let running = RunningClient(configuration)
        var quoted: LogRecord?
        while quoted == nil {
            let record = try await records.next()
            if record.message.contains("forged line") { quoted = record }
        }
        let message = quoted?.message ?? ""
        #expect(!message.unicodeScalars.contains { $0.properties.generalCategory == .control })
        #expect(message.contains("\\u{1b}[2J") && message.contains("\\u{a}[critical]"))
        #expect(message.count < 600 && message.hasSuffix("more)"))
        await running.stop()
        server.stop()
    }

    @Test func aWrongFirstFrameIsAProtocolViolation() async throws {
        let server = try await ScriptedServer.start { frame, peer in
            if case .hello = frame { peer.send(.push(Frame.Push(seq: 1, topic: "x", payload: []))) }
        }
        let running = RunningClient(.forTests(server.endpoint))
        let states = running.client.connectionStates
        let error = try await within(.seconds(20), "a protocol violation") {
            for await state in states where state.error != nil { return state.error }
            return nil
        }
        #expect(error?.code == .protocolViolation)
        await running.stop()
        server.stop()
    }
}
