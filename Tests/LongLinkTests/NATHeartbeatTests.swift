import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

/// A real client behind a NAT that forgets idle mappings (the fault proxy's, on real time, with short
/// timeouts): the heartbeat is what keeps a mapping alive, or finds out that it was lost.
@Suite("Heartbeat through a NAT", .sharedMachine)
struct NATHeartbeatTests {
    @Test("a heartbeat shorter than the NAT's timeout keeps the link through a long idle time")
    func shortHeartbeatKeepsTheMapping() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        await proxy.setNATIdleTimeout(.seconds(3))
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        // Well under the NAT's timeout, and long enough that a loaded machine's scheduling delays never make
        // the client declare a live link dead (it does so after two silent intervals).
        configuration.heartbeat = .seconds(1)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(try await client.request("echo", payload: bytes("before")) == bytes("before"))

        // The idle time under test (close to three NAT timeouts), not a synchronisation: nothing but
        // heartbeats crosses the proxy meanwhile.
        try await Task.sleep(for: .seconds(8))
        #expect(proxy.statistics.natMappingsForgotten == 0)
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        let statistics = await client.statistics
        #expect(statistics.deadLinks == 0)
        #expect(statistics.connects == 1)
        #expect(proxy.statistics.connectionsAccepted == 1)

        await running.stop()
        await proxy.stop()
        try await server.stop()
    }

    @Test("a heartbeat longer than the NAT's timeout finds the link dead within two intervals and reconnects")
    func longHeartbeatNoticesTheLostMapping() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        configuration.heartbeat = .seconds(1)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(try await client.request("echo", payload: bytes("before")) == bytes("before"))
        // The NAT goes on once the link is up, so a loaded machine's slow login cannot outlast its timeout.
        await proxy.setNATIdleTimeout(.milliseconds(300))

        try await eventually("the NAT to forget the idle mapping", within: .seconds(10)) {
            proxy.statistics.natMappingsForgotten >= 1
        }
        let forgotten = ContinuousClock.now
        // Nothing says so on the sockets: only the heartbeat can tell.
        try await eventually("the client to declare the link dead", within: .seconds(10)) {
            await client.statistics.deadLinks >= 1
        }
        let noticed = ContinuousClock.now - forgotten
        try await eventually("the client to reconnect", within: .seconds(10)) {
            await client.statistics.reconnects >= 1
        }
        // The NAT is switched off for the last call: the new link's mapping would otherwise be due to go idle too.
        await proxy.clearFaults()
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        #expect(proxy.statistics.connectionsAccepted >= 2)
        // Two intervals from the last traffic at most, and the mapping went 300 ms into them (plus slack for a
        // loaded machine).
        #expect(noticed < .seconds(4), "noticed after \(noticed)")

        await running.stop()
        await proxy.stop()
        try await server.stop()
    }
}
