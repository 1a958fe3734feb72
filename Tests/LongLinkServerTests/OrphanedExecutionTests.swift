import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// With de-duplication, a handler whose connection closed keeps running so that the client's
/// resend can join it; these tests hold it to its request's deadline and to a bound. Their clients
/// log in: only then are requests de-duplicated.
@Suite("Orphaned executions", .sharedMachine)
struct OrphanedExecutionTests {
    @Test func anOrphanedHandlerStillEndsAtItsRequestsDeadline() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await client.send(.request(Frame.Request(requestID: "h1", method: "hang", timeoutMilliseconds: 200)))
            #expect(try await probe.events.next() == "started h1")
            client.close()
            // The handler sleeps for an hour: only its deadline can end it.
            #expect(try await probe.events.next(within: .seconds(10), "the handler's cancellation") == "cancelled h1")
        }
    }

    @Test func orphanedExecutionsAreBoundedPerClient() async throws {
        let probe = Probe()
        var configuration = ServerConfiguration.testing
        configuration.maxOrphanedExecutionsPerClient = 2
        try await withServer(configuration, probe: probe) { server, address in
            let client = try await FrameClient.loggedIn(address, clientID: "phone-1")
            for index in 0..<5 {
                try await client.send(.request(Frame.Request(requestID: "h\(index)", method: "hang")))
            }
            var started = Set<String>()
            for _ in 0..<5 { started.insert(try await probe.events.next()) }
            #expect(started.count == 5)
            client.close()
            // Two may stay for a resend; the other three are stopped at once.
            var cancelled = Set<String>()
            for _ in 0..<3 { cancelled.insert(try await probe.events.next(within: .seconds(10))) }
            #expect(cancelled.count == 3)
            #expect(cancelled.allSatisfy { $0.hasPrefix("cancelled h") })
            #expect(server.core.dedupe.withLock { $0.orphans.count } == 2)

            // Another client has a share of its own.
            let other = try await FrameClient.loggedIn(address, clientID: "phone-2")
            try await other.send(.request(Frame.Request(requestID: "o1", method: "hang")))
            #expect(try await probe.events.next() == "started o1")
            other.close()
            try await eventually("the second client's orphan is kept") {
                server.core.dedupe.withLock { $0.orphans.count } == 3
            }
            #expect(probe.events.count == 0)
        }
    }

    @Test func orphanedExecutionsAreBoundedInAll() async throws {
        let probe = Probe()
        var configuration = ServerConfiguration.testing
        configuration.maxOrphanedExecutions = 3
        try await withServer(configuration, probe: probe) { server, address in
            for index in 0..<5 {
                let client = try await FrameClient.loggedIn(address, clientID: "phone-\(index)")
                try await client.send(.request(Frame.Request(requestID: "h\(index)", method: "hang")))
                #expect(try await probe.events.next() == "started h\(index)")
                client.close()
                if index >= 3 {
                    #expect(try await probe.events.next(within: .seconds(10)) == "cancelled h\(index)")
                }
            }
            #expect(server.core.dedupe.withLock { $0.orphans.count } == 3)
        }
    }

    @Test func aResendJoinsAnOrphanAndGetsItsReply() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let first = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await first.send(.request(Frame.Request(requestID: "g1", method: "gated", timeoutMilliseconds: 20_000)))
            #expect(try await probe.events.next() == "started g1")
            first.close()
            try await eventually("the execution is orphaned") { server.core.dedupe.withLock { $0.orphans.count } == 1 }
            let second = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await second.send(
                .request(Frame.Request(requestID: "g1", method: "gated", timeoutMilliseconds: 20_000)))
            #expect(try await second.call("echo", id: "sync-point").requestID == "sync-point")
            probe.gate.put(())
            let reply = try await second.response()
            #expect(reply.text == "execution 1")
            // Finished: no longer an orphan.
            #expect(server.core.dedupe.withLock { $0.orphans.count } == 0)
        }
    }

    @Test func aJoinedCopyEndsAtItsOwnDeadline() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let first = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await first.send(.request(Frame.Request(requestID: "g1", method: "gated")))
            #expect(try await probe.events.next() == "started g1")
            // A copy from a second connection joins the running execution with a short budget.
            let second = try await FrameClient.loggedIn(address, clientID: "phone-1")
            try await second.send(.request(Frame.Request(requestID: "g1", method: "gated", timeoutMilliseconds: 100)))
            let reply = try await second.response(within: .seconds(10))
            #expect(reply.requestID == "g1")
            #expect(reply.status?.code == .deadlineExceeded)
            // The first copy, which gave no budget, is still served.
            probe.gate.put(())
            #expect(try await first.response().text == "execution 1")
        }
    }
}
