import Foundation
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@Suite("Requests", .sharedMachine)
struct RequestTests {
    @Test func repliesCarryTheRequestIDAndMayComeInAnyOrder() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            // The gated request is sent first but answered last.
            try await client.send(.request(Frame.Request(requestID: "slow", method: "gated", payload: bytes("!"))))
            #expect(try await probe.events.next() == "started slow")
            try await client.send(.request(Frame.Request(requestID: "fast", method: "echo", payload: bytes("quick"))))
            let first = try await client.response()
            #expect(first.requestID == "fast")
            #expect(first.text == "quick")
            #expect(first.status == nil)
            probe.gate.put(())
            let second = try await client.response()
            #expect(second.requestID == "slow")
            #expect(second.text == "execution 1!")
        }
    }

    @Test func synchronousHandlersAnswerInlineThroughTheSamePath() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "test-client")
            #expect(try await client.call("echo.sync", bytes("fast"), id: "1").text == "fast")
            let failed = try await client.call("fail.sync", id: "2")
            #expect(failed.status == Frame.Status(code: .failedPrecondition, message: "not now"))
            // De-duplication covers them too: the same id is replayed, not run again.
            #expect(try await client.call("echo.sync", bytes("other"), id: "1").text == "fast")
            #expect(server.statistics.requestsReplayed == 1)
            #expect(server.statistics.handlersRunning == 0)
        }
    }

    @Test func anUnknownMethodIsUnimplemented() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            let response = try await client.call("no.such.method", id: "1")
            #expect(response.status?.code == .unimplemented)
            #expect(response.status?.message.contains("no.such.method") == true)
        }
    }

    @Test func aHandlerErrorBecomesItsStatus() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            let response = try await client.call("fail", bytes("7:not yours"), id: "1")
            #expect(response.status == Frame.Status(code: .permissionDenied, message: "not yours"))
            let crash = try await client.call("crash", id: "2")
            #expect(crash.status?.code == .internalError)
            #expect(crash.status?.message.contains("Secret") == false)  // foreign error text is not sent
        }
    }

    @Test func typedHandlersUseTheSharedCodec() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            let reply = try await client.call("mirror", bytes(#"{"x":1,"y":2}"#), id: "1")
            let object = try JSONSerialization.jsonObject(with: Data(reply.payload)) as? [String: Int]
            #expect(object == ["x": 2, "y": 1])
            let bad = try await client.call("mirror", bytes("not json"), id: "2")
            #expect(bad.status?.code == .invalidArgument)
        }
    }

    @Test func cancelStopsTheHandlerAndSendsNoResponse() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.request(Frame.Request(requestID: "h1", method: "hang")))
            #expect(try await probe.events.next() == "started h1")
            try await client.send(.cancel(Frame.Cancel(requestID: "h1")), .cancel(Frame.Cancel(requestID: "unknown")))
            #expect(try await probe.events.next() == "cancelled h1")
            // The next reply on the connection is for the next request: no Response for h1 came.
            let next = try await client.call("echo", bytes("after"), id: "e1")
            #expect(next.requestID == "e1")
            #expect(server.statistics.requestsCancelled == 1)
        }
    }

    @Test func timeoutMillisecondsBoundsTheHandler() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            let response = try await client.call("hang", id: "t1", timeoutMilliseconds: 50)
            #expect(response.requestID == "t1")
            #expect(response.status?.code == .deadlineExceeded)
            #expect(try await probe.events.next() == "started t1")
            #expect(try await probe.events.next() == "cancelled t1")
            #expect(server.statistics.requestsTimedOut == 1)
        }
    }

    /// A connection that closes with more requests in flight than the server lets go of in one
    /// loop turn still has every handler cancelled: the rest follow in later turns.
    @Test func closingWithManyInFlightCancelsEveryHandler() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxInFlightPerConnection = 3_000
        configuration.dedupeWindow = .zero  // with de-duplication, a closed connection's handlers run on
        let count = 2_500  // more than two of the server's slices of 1,024 (`ServerConnection.releasedPerTurn`)
        try await withServer(configuration) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            var bytes: [UInt8] = []
            for index in 0..<count {
                Frame.request(Frame.Request(requestID: "h\(index)", method: "hang")).encodeDelimited(into: &bytes)
            }
            try await client.sendRaw(bytes)
            try await eventually("\(count) handlers run") { server.statistics.handlersRunning == count }
            client.close()
            try await eventually("every handler is cancelled") { server.statistics.handlersRunning == 0 }
            #expect(server.statistics.handlersStarted == count)
        }
    }

    @Test func pingIsAnsweredWithTheSameNonceAndTheLoad() async throws {
        try await withServer { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.ping(Frame.Ping(nonce: 0xDEAD_BEEF_0000_0001)), .unrecognized)
            guard case .pong(let pong) = try await client.nextFrame() else {
                Issue.record("expected Pong")
                return
            }
            #expect(pong.nonce == 0xDEAD_BEEF_0000_0001)
            #expect(pong.loadPermille <= 1000)
        }
    }

    @Test func tooManyInFlightIsResourceExhausted() async throws {
        var configuration = ServerConfiguration.testing
        configuration.maxInFlightPerConnection = 2
        let probe = Probe()
        try await withServer(configuration, probe: probe) { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(
                .request(Frame.Request(requestID: "a", method: "gated")),
                .request(Frame.Request(requestID: "b", method: "gated")),
                .request(Frame.Request(requestID: "c", method: "gated")))
            let refused = try await client.response()
            #expect(refused.requestID == "c")
            #expect(refused.status?.code == .resourceExhausted)
            probe.gate.put(())
            probe.gate.put(())
            let ids = Set([try await client.response().requestID, try await client.response().requestID])
            #expect(ids == ["a", "b"])
            #expect(server.statistics.requestsRejected == 1)
        }
    }

    @Test func aClientGoAwayStopsNewRequestsAndClosesAfterTheLastReply() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake()
            try await client.send(.request(Frame.Request(requestID: "g", method: "gated")))
            #expect(try await probe.events.next() == "started g")
            try await client.send(
                .goAway(Frame.GoAway(code: .ok, reason: "bye")),
                .request(Frame.Request(requestID: "late", method: "echo")))
            let late = try await client.response()
            #expect(late.requestID == "late")
            #expect(late.status?.code == .unavailable)
            probe.gate.put(())
            let frames = try await client.framesUntilClosed()
            #expect(frames.contains { if case .response(let r) = $0 { r.requestID == "g" } else { false } })
        }
    }
}
