import Foundation
import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

/// A real client with an adaptive heartbeat behind the fault proxy's NAT, on real time with short
/// intervals: it learns an interval below the NAT's timeout, and the probe that found the limit costs a
/// reconnect and nothing else.
@Suite("Adaptive heartbeat through a NAT", .sharedMachine)
struct AdaptiveHeartbeatTests {
    /// 200 ms, 600 ms, 1 s, 1.4 s, 1.8 s: an idle Ping goes out 1 to 1.25 intervals after the last traffic,
    /// so 1 s is safe under a 1.5 s NAT with room for a loaded machine, and 1.8 s is not.
    static let parameters = AdaptiveHeartbeat(
        start: .milliseconds(200), step: .milliseconds(400), maximum: .seconds(3), successesBeforeStep: 2,
        answerTimeout: .milliseconds(800))

    @Test("converges below a 1.5 s NAT, loses only probe links, replaces them at once, and keeps serving")
    func convergesBelowTheNAT() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        await proxy.setNATIdleTimeout(.milliseconds(1_500))
        let path = NSTemporaryDirectory() + "adaptive-\(UInt64.random(in: 0...UInt64.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        configuration.heartbeatPolicy = .adaptive(Self.parameters)
        configuration.heartbeatStore = FileHeartbeatStore(path: path)
        configuration.network = .wifi
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(await client.heartbeatInterval == .milliseconds(200))

        // Idle: the client learns until a probe loses a mapping and it steps back, stable.
        try await eventually("a probe to find the NAT's limit and the interval to be stable", within: .seconds(60)) {
            guard let wifi = await client.learnedHeartbeat?.networks.first(where: { $0.key == .wifi }) else {
                return false
            }
            return wifi.stableSince != nil && proxy.statistics.natMappingsForgotten >= 1
        }
        let learned = try #require(await client.learnedHeartbeat?.networks.first { $0.key == .wifi })
        #expect(learned.intervalMilliseconds < 1_500, "learned \(learned.intervalMilliseconds) ms")
        #expect(learned.intervalMilliseconds >= 600, "learned \(learned.intervalMilliseconds) ms")
        // The link lost to the probe was replaced, and the new one proposes the learned interval.
        try await eventually("the client to be connected", within: .seconds(10)) {
            await client.heartbeatInterval != nil
        }
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        #expect(await client.statistics.deadLinks >= 1)
        // Kept for the next launch.
        let stored = try #require(try FileHeartbeatStore(path: path).load())
        #expect(stored.networks.contains { $0.key == .wifi && $0.stableSince != nil })

        await running.stop()
        await proxy.stop()
        try await server.stop()
    }

    @Test("a request sent into a black hole on a long learned interval is noticed within a few answer timeouts")
    func blackHoleIsNoticedQuickly() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let proxy = FaultProxy(upstream: server.endpoint)
        try await proxy.start()
        var configuration = ClientConfiguration.forTests(try proxy.endpoint)
        // 20 s: no idle Ping during the test; two such intervals would be 40 s to notice.
        configuration.heartbeatPolicy = .adaptive(
            AdaptiveHeartbeat(start: .seconds(20), maximum: .seconds(20), answerTimeout: .milliseconds(300)))
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(try await client.request("echo", payload: bytes("before")) == bytes("before"))
        await proxy.apply(.blackHole())
        let sent = ContinuousClock.now
        async let answer = try? client.request("echo", payload: bytes("into the hole"), options: RequestOptions(timeout: .seconds(30)))
        try await eventually("the client to declare the link dead", within: .seconds(15)) {
            await client.statistics.deadLinks >= 1
        }
        let noticed = ContinuousClock.now - sent
        // Two or three answer timeouts (under 1 s) plus slack for a loaded machine; far from two 20 s intervals.
        #expect(noticed < .seconds(10), "noticed after \(noticed)")
        await proxy.apply(.restoreForwarding())
        _ = await answer
        await running.stop()
        await proxy.stop()
        try await server.stop()
    }

    @Test("a network change proposes that network's learned interval on the live link, and the server takes it")
    func networkChangeChangesTheIntervalLive() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let path = NSTemporaryDirectory() + "adaptive-\(UInt64.random(in: 0...UInt64.max)).json"
        defer { try? FileManager.default.removeItem(atPath: path) }
        // A previous launch found cellular stable at 900 ms.
        try FileHeartbeatStore(path: path).save(
            HeartbeatSnapshot(networks: [
                .init(key: .cellular, intervalMilliseconds: 900, survivedMilliseconds: 900, stableSince: Date())
            ]))
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.heartbeatPolicy = .adaptive(Self.parameters)
        configuration.heartbeatStore = FileHeartbeatStore(path: path)
        configuration.network = .wifi
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(await client.heartbeatInterval == .milliseconds(200))
        client.networkDidChange(to: .cellular)
        try await eventually("the server to take the cellular interval", within: .seconds(10)) {
            await client.heartbeatInterval == .milliseconds(900)
        }
        // On the same link: no reconnect was needed.
        #expect(await client.statistics.connects == 1)
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        await running.stop()
        try await server.stop()
    }

    @Test("a fixed heartbeat proposes the configured interval and learns nothing")
    func fixedIsTheDefault() async throws {
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.heartbeat = .milliseconds(700)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        #expect(await running.client.heartbeatInterval == .milliseconds(700))
        #expect(await running.client.learnedHeartbeat == nil)
        await running.stop()
        try await server.stop()
    }
}
