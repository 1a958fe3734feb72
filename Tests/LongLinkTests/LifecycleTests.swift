import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLink

@Suite("Heartbeat, liveness and app lifecycle", .sharedMachine)
struct LifecycleTests {
    @Test func theHeartbeatMonitorPingsAfterOneQuietIntervalAndGivesUpAfterTwo() {
        var monitor = HeartbeatMonitor()
        // Traffic both ways: nothing to do.
        for _ in 0..<10 { #expect(monitor.tick(receivedSinceLastTick: true, sentSinceLastTick: true) == .none) }
        // Silence inbound (we keep sending): a Ping at one interval, dead at two.
        var actions: [HeartbeatMonitor.TickAction] = []
        for _ in 0..<8 { actions.append(monitor.tick(receivedSinceLastTick: false, sentSinceLastTick: true)) }
        #expect(actions == [.none, .none, .none, .sendPing, .none, .none, .none, .declareDead])
    }

    @Test func aClientThatOnlyReceivesStillPingsSoTheServerHearsIt() {
        var monitor = HeartbeatMonitor()
        var actions: [HeartbeatMonitor.TickAction] = []
        for _ in 0..<4 { actions.append(monitor.tick(receivedSinceLastTick: true, sentSinceLastTick: false)) }
        #expect(actions == [.none, .none, .none, .sendPing])
        // The Ping counts as sent: the next interval starts over.
        #expect(monitor.tick(receivedSinceLastTick: true, sentSinceLastTick: true) == .none)
    }

    @Test(arguments: deadlineStrategies)
    func deadlinesFollowTheInjectedClock(strategy: DeadlineStrategy) async throws {
        let clock = ManualClock()
        let server = try await ScriptedServer.start { frame, peer in
            if case .hello = frame { peer.welcome() }  // and never answers a request
        }
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        configuration.clock = clock
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        let call = Task { try await client.request("slow", options: RequestOptions(timeout: .seconds(10))) }
        try await eventually("the call is in flight") { await client.statistics.inFlight == 1 }
        await clock.advance(by: .milliseconds(9_990))
        #expect(await client.statistics.inFlight == 1)
        await clock.advance(by: .milliseconds(20))
        do {
            _ = try await call.value
            Issue.record("expected a deadline error")
        } catch let error as LongLinkError {
            #expect(error.code == .deadlineExceeded)
        }
        #expect(await client.statistics.inFlight == 0)
        await running.stop()
        server.stop()
    }

    @Test(arguments: deadlineStrategies)
    func whenTheServerIsGoneForGoodQueuedCallsFailAtTheirDeadlines(strategy: DeadlineStrategy) async throws {
        let clock = ManualClock()
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = ClientConfiguration.forTests(server.endpoint, strategy: strategy)
        configuration.clock = clock
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        server.server.abort()
        try await server.stop()
        // The client has seen the link go: the calls below wait in the queue, never written (one
        // written on the dead link would fail with connectionLost: it was made before a login).
        try await running.waitForPhase(.waitingToReconnect)
        let client = running.client
        let short = Task { try await client.request("echo", options: RequestOptions(timeout: .seconds(1))) }
        let long = Task { try await client.request("echo", options: RequestOptions(timeout: .seconds(3))) }
        try await eventually("both calls wait") { await client.core.pendingCount == 2 }
        await clock.advance(by: .milliseconds(1_001))
        await #expect(throws: LongLinkError.self) { try await short.value }
        #expect(await client.core.pendingCount == 1)
        await clock.advance(by: .seconds(2))
        await #expect(throws: LongLinkError.self) { try await long.value }
        #expect(await client.core.pendingCount == 0)
        await running.stop()
    }

    @Test func comingToTheForegroundProbesTheLinkAndReplacesADeadOne() async throws {
        let clock = ManualClock()
        let answering = Mailbox<Bool>()
        let mute = MuteSwitch()
        let server = try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello:
                peer.welcome(heartbeatMilliseconds: 60_000)
                answering.put(true)
            case .ping(let ping):
                if !mute.isOn { peer.send(.pong(Frame.Pong(nonce: ping.nonce))) }
            default: break
            }
        }
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.clock = clock
        configuration.heartbeat = .seconds(60)
        configuration.livenessProbeTimeout = .seconds(2)
        let running = RunningClient(configuration)
        let client = running.client
        try await running.waitUntilConnected()
        _ = try await answering.next()
        client.appDidEnterBackground()
        mute.isOn = true  // the link died while the app slept: no answers any more
        client.appWillEnterForeground()
        let peer = try await server.nextPeer()
        var pinged = false
        while !pinged {
            if case .ping = try await peer.received.next() { pinged = true }
        }
        await clock.advance(by: .seconds(2))
        try await eventually("the dead link is replaced") { await client.statistics.deadLinks == 1 }
        mute.isOn = false
        _ = try await answering.next()  // a new connection, long before a heartbeat would have noticed
        await running.stop()
        server.stop()
    }

    @Test func inTheBackgroundReconnectionWaitsForTheForeground() async throws {
        let probe = Probe()
        let port = try ReservedPort()
        defer { port.release() }
        let server = try await RunningServer.start(probe: probe, on: port)
        let running = RunningClient(.forTests(server.endpoint))
        let client = running.client
        try await running.waitUntilConnected()
        client.appDidEnterBackground()
        server.server.abort()
        try await server.stop()
        let restarted = try await RunningServer.start(probe: probe, on: port)
        let states = client.connectionStates
        let paused = try await within(.seconds(20), "the reconnect to pause") {
            for await state in states where state.reason == "paused in the background" { return true }
            return false
        }
        #expect(paused)
        #expect(await client.statistics.connects == 1)
        client.appWillEnterForeground()
        try await running.waitUntilConnected()
        #expect(await client.statistics.connects == 2)
        await running.stop()
        try await restarted.stop()
    }
}

/// A flag a scripted server reads from its event loop while the test flips it.
final class MuteSwitch: Sendable {
    private let flag = Atomic<Bool>(false)

    var isOn: Bool {
        get { flag.load(ordering: .acquiring) }
        set { flag.store(newValue, ordering: .releasing) }
    }
}
