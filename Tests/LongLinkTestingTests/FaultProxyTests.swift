import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@Suite("FaultProxy", .sharedMachine)
struct FaultProxyTests {
    @Test("forwards both ways; 1 MiB of random bytes arrives intact")
    func forwardsLargeTransfersIntact() async throws {
        try await withEchoProxy { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            let payload = randomBytes(1 << 20, seed: 42)
            try await client.send(payload)
            let received = try await client.waitForBytes(payload.count)
            #expect(received.count == payload.count)
            #expect(checksum(received) == checksum(payload))
            #expect(received == payload)

            let session = try await echo.session()
            #expect(checksum(session.state.value.bytes) == checksum(payload))
            let statistics = proxy.statistics
            #expect(statistics.connectionsAccepted == 1)
            #expect(statistics.openConnections == 1)
            #expect(statistics.bytesForwardedUpstream == payload.count)
            #expect(statistics.bytesForwardedDownstream == payload.count)
            #expect(statistics.bytesDiscardedUpstream == 0)
            #expect(proxy.connections.count == 1)
            #expect(proxy.connections.first?.statistics.bytesForwardedDownstream == payload.count)
        }
    }

    @Test("cut: both ends see the stream end")
    func cutClosesBothEnds() async throws {
        try await withEchoProxy { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            try await roundTrip(client, "hello", expecting: "hello")
            let session = try await echo.session()

            await proxy.cut()
            let clientError = try await client.waitForClose()
            let serverError = try await session.waitForClose()
            #expect(clientError == nil)
            #expect(serverError == nil)
            try await eventually("the pair to be gone") { proxy.connections.isEmpty }
            #expect(proxy.statistics.faultsApplied == 1)
        }
    }

    @Test("reset: the client sees connectionReset")
    func resetResetsTheClient() async throws {
        try await withEchoProxy { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            try await roundTrip(client, "hello", expecting: "hello")
            let session = try await echo.session()

            await proxy.reset()
            let clientError = try await client.waitForClose()
            #expect(clientError?.code == .connectionReset)
            let serverError = try await session.waitForClose()
            #expect(serverError?.code == .connectionReset)
        }
    }

    @Test("black hole both ways: nothing arrives, the sockets stay open, forwarding resumes after restore")
    func blackHoleBothWays() async throws {
        try await withEchoProxy { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            try await roundTrip(client, "before.", expecting: "before.")
            let session = try await echo.session()

            await proxy.blackHole(.both)
            try await client.send("LOST-UP")
            try await session.send(Array("LOST-DOWN".utf8))
            // Both reached the proxy during the black hole and were discarded there.
            try await eventually("the proxy to discard both sends") {
                let statistics = proxy.statistics
                return statistics.bytesDiscardedUpstream >= 7 && statistics.bytesDiscardedDownstream >= 9
            }
            #expect(!client.state.value.closed)
            #expect(!session.state.value.closed)
            #expect(proxy.connections.count == 1)
            #expect(proxy.connections.first?.isOpen == true)

            await proxy.restoreForwarding()
            // Order is preserved, so anything held back would arrive before these.
            try await roundTrip(client, "after.", expecting: "before.after.")
            try await session.send(Array("push.".utf8))
            try await client.waitForText("before.after.push.")
            #expect(session.state.value.bytes == Array("before.after.".utf8))
            #expect(proxy.statistics.bytesDiscardedUpstream == 7)
            #expect(proxy.statistics.bytesDiscardedDownstream == 9)
        }
    }

    @Test("a fault applied to one pair leaves the others alone")
    func faultOnOnePair() async throws {
        try await withEchoProxy { _, proxy in
            let first = try await TestPeer.connect(to: try proxy.endpoint)
            let second = try await TestPeer.connect(to: try proxy.endpoint)
            defer {
                first.close()
                second.close()
            }
            try await roundTrip(first, "1", expecting: "1")
            try await roundTrip(second, "2", expecting: "2")
            let pairs = proxy.connections
            #expect(Set(pairs.map(\.id)) == [1, 2])
            // Pairs are told apart by the client's address (ids follow registration, not connect, order).
            let target = try #require(pairs.first { $0.clientAddress == first.connection.localAddress })
            let other = try #require(pairs.first { $0 != target })

            await target.reset()
            #expect(try await first.waitForClose()?.code == .connectionReset)
            try await roundTrip(second, "3", expecting: "23")
            #expect(target.statistics.faultsApplied == 1)
            #expect(other.statistics.faultsApplied == 0)
            #expect(!target.isOpen)
            #expect(proxy.connections == [other])
        }
    }

    @Test("one-byte split: data intact, the receiver sees many reads")
    func oneByteSplit() async throws {
        // One loop for the proxy and the client: each proxy write then lands in its own client read.
        let group = EventLoopGroup(loopCount: 1, name: "split")
        try await withEchoProxy(group: group) { echo, proxy in
            await proxy.splitWrites(into: 1)
            let client = try await TestPeer.connect(to: try proxy.endpoint, on: group.loops[0])
            defer { client.close() }
            let payload = randomBytes(2_000, seed: 7)
            try await client.send(payload)
            let received = try await client.waitForBytes(payload.count)
            #expect(received == payload)
            #expect(client.state.value.reads > 200)
            #expect(try await echo.session().state.value.bytes == payload)
        }
        await group.shutdownAndWait()
    }

    @Test("merged writes arrive intact")
    func mergedWrites() async throws {
        try await withEchoProxy { _, proxy in
            await proxy.mergeWrites(window: .milliseconds(5))
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            var expected = ""
            for index in 0..<20 {
                try await client.send("<\(index)>")
                expected += "<\(index)>"
            }
            try await client.waitForText(expected)
        }
    }

    @Test("latency: a round trip takes at least the configured latency each way")
    func latency() async throws {
        try await withEchoProxy { _, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            try await roundTrip(client, "warm-up.", expecting: "warm-up.")

            await proxy.setLatency(.milliseconds(100))
            let start = ContinuousClock.now
            try await roundTrip(client, "ping.", expecting: "warm-up.ping.")
            #expect(ContinuousClock.now - start >= .milliseconds(200))
        }
    }

    @Test("throttle: 256 KiB at 1 MiB/s takes at least 200 ms")
    func throttle() async throws {
        try await withEchoProxy { _, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            await proxy.throttle(bytesPerSecond: 1 << 20, .downstream)
            let payload = randomBytes(256 << 10, seed: 3)
            let start = ContinuousClock.now
            try await client.send(payload)
            let received = try await client.waitForBytes(payload.count)
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            #expect(received == payload)
        }
    }

    @Test("refusing: connections are dropped while refusing and proxied afterwards")
    func refusesConnections() async throws {
        try await withEchoProxy { _, proxy in
            await proxy.refuseConnections(reset: true)
            let refused = try await closeErrorOfConnection(to: try proxy.endpoint)
            #expect(refused?.code == .connectionReset)

            await proxy.acceptConnections()
            let accepted = try await TestPeer.connect(to: try proxy.endpoint)
            defer { accepted.close() }
            try await roundTrip(accepted, "in", expecting: "in")

            let since = ContinuousClock.now
            // A window wide enough that the next connection surely lands in it under a loaded suite.
            await proxy.apply(.refuseConnections(for: .seconds(1)))
            #expect(try await closeErrorOfConnection(to: try proxy.endpoint) == nil)
            // The window ends by itself: its reversal is the fourth fault applied, never early. Waited
            // for as an event, not a time: a loaded loop may run the reversal's timer late.
            try await eventually("the refusal window to end") { proxy.statistics.faultsApplied == 4 }
            #expect(ContinuousClock.now - since >= .seconds(1))
            #expect(proxy.statistics.connectionsAccepted == 1)
            let later = try await TestPeer.connect(to: try proxy.endpoint)
            defer { later.close() }
            try await roundTrip(later, "again", expecting: "again")
            #expect(proxy.statistics.connectionsRefused == 2)
            #expect(proxy.statistics.connectionsAccepted == 2)
        }
    }

    @Test("pausing reading stalls the writer; resuming delivers everything")
    func pauseStallsTheWriter() async throws {
        try await withEchoProxy(echoes: false, keepsBytes: false) { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint, keepsBytes: false)
            defer { client.close() }
            try await client.send([1])
            let session = try await echo.session()
            try await session.state.wait("the first byte") { $0.byteCount == 1 }

            await proxy.pauseReading(.upstream)
            let chunk = [UInt8](repeating: 0xAB, count: 256 << 10)
            let chunks = 256  // 64 MiB: far more than the kernel buffers hold
            let sent = Atomic<Int>(0)
            let writer = Task {
                for _ in 0..<chunks {
                    try await client.send(chunk)
                    sent.add(1, ordering: .relaxed)
                }
            }
            try await client.state.wait("the client to become unwritable", within: .seconds(20)) {
                $0.writability.contains(false)
            }
            #expect(sent.load(ordering: .relaxed) < chunks)
            #expect(session.state.value.byteCount == 1)
            #expect(proxy.statistics.bytesForwardedUpstream == 1)

            await proxy.resumeReading(.upstream)
            try await session.state.wait("every byte at the server", within: .seconds(60)) {
                $0.byteCount == 1 + chunks * chunk.count
            }
            try await within(.seconds(10), "the writer to finish") { try await writer.value }
        }
    }

    @Test("a timed black hole ends by itself")
    func timedBlackHole() async throws {
        try await withEchoProxy { _, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            try await roundTrip(client, "a", expecting: "a")
            // Long enough for "b" to reach the proxy inside the hole even when the whole suite
            // loads both cores; arriving after the hole, it would be forwarded, not discarded.
            await proxy.blackHole(.upstream, for: .seconds(1))
            try await client.send("b")
            try await eventually("the proxy to discard the byte") { proxy.statistics.bytesDiscardedUpstream == 1 }
            try await eventually("forwarding to be restored") { proxy.statistics.faultsApplied == 2 }
            try await roundTrip(client, "c", expecting: "ac")
        }
    }

    @Test("an unreachable upstream resets the client")
    func unreachableUpstream() async throws {
        // Held, never listening: refused for as long as the test runs. (A stopped server's port was
        // free, and the proxy's own connect to it once got it as its source port: a TCP
        // self-connect, which succeeds.)
        let reserved = try ReservedPort()
        defer { reserved.release() }
        let upstream = Endpoint.tcp(host: "127.0.0.1", port: reserved.port)
        let proxy = FaultProxy(upstream: upstream)
        try await proxy.start()
        let error = try await closeErrorOfConnection(to: try proxy.endpoint)
        #expect(error?.code == .connectionReset)
        #expect(proxy.statistics.upstreamConnectFailures == 1)
        try await within(.seconds(10), "the proxy to stop") { await proxy.stop() }
    }

    @Test("stop closes every pair and refuses a second start")
    func stopClosesPairs() async throws {
        let echo = try await EchoServer.start()
        defer { echo.stop() }
        let proxy = FaultProxy(upstream: echo.endpoint)
        let address = try await proxy.start()
        #expect(address.port != 0)
        let client = try await TestPeer.connect(to: try proxy.endpoint)
        try await roundTrip(client, "x", expecting: "x")
        try await within(.seconds(10), "the proxy to stop") { await proxy.stop() }
        try await client.waitForClose()
        #expect(proxy.connections.isEmpty)
        await #expect(throws: LongLinkError.self) { try await proxy.start() }
    }
}

/// Connects, and returns how the connection ended: its close error, or the error connecting threw.
func closeErrorOfConnection(to endpoint: Endpoint) async throws -> LongLinkError? {
    let peer: TestPeer
    do {
        peer = try await TestPeer.connect(to: endpoint)
    } catch let error as LongLinkError {
        return error
    }
    return try await peer.waitForClose()
}
