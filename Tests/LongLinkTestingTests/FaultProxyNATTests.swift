import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

/// The NAT fault through real sockets on loopback. The proxy runs on real time, so the NAT's timeouts are
/// short real durations; every wait is for an event (a counter, a close), bounded.
@Suite("FaultProxy NAT", .sharedMachine)
struct FaultProxyNATTests {
    @Test("a link busy in one direction at a time keeps its mapping")
    func busyLinkSurvives() async throws {
        try await withEchoProxy(echoes: false) { echo, proxy in
            await proxy.setNATIdleTimeout(.seconds(1))
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            try await client.send("u")
            let session = try await echo.session()
            try await session.state.wait("the first byte") { $0.byteCount == 1 }
            // Traffic only upstream, then only downstream, each for longer than the timeout. The pauses pace
            // the traffic (the scenario itself); nothing waits on them.
            for _ in 0..<12 {
                try await Task.sleep(for: .milliseconds(100))
                try await client.send("u")
            }
            for _ in 0..<12 {
                try await Task.sleep(for: .milliseconds(100))
                try await session.send(Array("d".utf8))
            }
            try await client.waitForBytes(12)
            try await session.state.wait("every upstream byte") { $0.byteCount == 13 }
            #expect(proxy.statistics.natMappingsForgotten == 0)
            #expect(proxy.statistics.bytesDiscardedUpstream == 0)
            #expect(proxy.statistics.bytesDiscardedDownstream == 0)
            #expect(proxy.connections.first?.statistics.isNATMappingForgotten == false)
        }
    }

    @Test("an idle link loses its mapping; with .drop, later bytes vanish and both sockets stay open")
    func idleLinkDropsSilently() async throws {
        try await withEchoProxy { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            defer { client.close() }
            try await roundTrip(client, "a", expecting: "a")
            let session = try await echo.session()
            // The NAT goes on after the first round trip, so a loaded machine cannot make the setup itself idle
            // for longer than the timeout; the idle time counts from here.
            await proxy.apply(.natIdleTimeout(.milliseconds(300), onForgotten: .drop))

            try await eventually("the NAT to forget the idle mapping", within: .seconds(10)) {
                proxy.statistics.natMappingsForgotten == 1
            }
            #expect(proxy.connections.first?.statistics.isNATMappingForgotten == true)
            try await client.send("LOST-UP")
            try await session.send(Array("LOST-DOWN".utf8))
            try await eventually("the proxy to discard both sends") {
                let statistics = proxy.statistics
                return statistics.bytesDiscardedUpstream == 7 && statistics.bytesDiscardedDownstream == 9
            }
            // Discarded, so never delivered; and a half-open link: neither peer hears a close.
            #expect(client.state.value.bytes == Array("a".utf8))
            #expect(session.state.value.bytes == Array("a".utf8))
            #expect(!client.state.value.closed)
            #expect(!session.state.value.closed)
            #expect(proxy.connections.first?.isOpen == true)
            // Forgotten for good: neither turning the NAT off nor clearing brings the mapping back.
            await proxy.clearFaults()
            try await client.send("b")
            try await eventually("the proxy to discard the next byte") {
                proxy.statistics.bytesDiscardedUpstream == 8
            }
            #expect(session.state.value.bytes == Array("a".utf8))

            // A new connection gets a new mapping.
            let next = try await TestPeer.connect(to: try proxy.endpoint)
            defer { next.close() }
            try await roundTrip(next, "fresh", expecting: "fresh")
        }
    }

    @Test("an idle link loses its mapping; with .reset, each peer is reset when it next sends")
    func idleLinkAnswersWithResets() async throws {
        try await withEchoProxy(echoes: false) { echo, proxy in
            let client = try await TestPeer.connect(to: try proxy.endpoint)
            try await client.send("a")
            let session = try await echo.session()
            try await session.state.wait("the first byte") { $0.byteCount == 1 }
            // On after the first byte, as above: the idle time counts from here.
            await proxy.setNATIdleTimeout(.milliseconds(300), onForgotten: .reset)

            try await eventually("the NAT to forget the idle mapping", within: .seconds(10)) {
                proxy.statistics.natMappingsForgotten == 1
            }
            try await client.send("x")
            #expect(try await client.waitForClose()?.code == .connectionReset)
            // The reset answered the client only; the server hears of it when it sends.
            #expect(!session.state.value.closed)
            #expect(session.state.value.bytes == Array("a".utf8))
            try await session.send(Array("y".utf8))
            #expect(try await session.waitForClose()?.code == .connectionReset)
            #expect(client.state.value.bytes.isEmpty)
            try await eventually("the pair to be gone") { proxy.connections.isEmpty }
        }
    }

    @Test("a schedule expands a timed NAT into the NAT and its end")
    func timedNATInASchedule() {
        let schedule: FaultSchedule = [
            .at(.seconds(1), .natIdleTimeout(.seconds(30), onForgotten: .reset, for: .seconds(5)))
        ]
        #expect(
            schedule.timeline.map(\.fault) == [
                .natIdleTimeout(.seconds(30), onForgotten: .reset), .natIdleTimeout(nil, onForgotten: .reset),
            ])
        #expect(schedule.timeline.map(\.offset) == [.seconds(1), .seconds(6)])
        #expect(NetworkFault.natIdleTimeout(.seconds(30)).description == "natIdleTimeout(30.0 seconds, drop)")
    }
}
