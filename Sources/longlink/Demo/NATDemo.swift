import Foundation
import LongLink
import LongLinkCLISupport
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

/// `longlink demo --nat DURATION`: an adaptive heartbeat learning a NAT. A server behind the fault
/// proxy's NAT, which forgets a mapping idle for DURATION; a client with
/// ``HeartbeatPolicy/adaptive(_:)`` scaled to it (start a tenth of it, step a quarter, one quiet
/// interval survived before each step), idle but for its heartbeat. Prints each step, the probe that
/// found the limit (a link lost and replaced at once), and what was learned.
enum NATDemo {
    static func run(nat: Duration, duration: Duration, quiet: Bool) async throws -> Int32 {
        let out = Terminal.standardOutput
        let clock = ContinuousClock()
        let start = clock.now
        func say(_ text: String) {
            guard !quiet else { return }
            out.line("\(out.styled(String(format: "%6.1fs", (clock.now - start).seconds), .dim))  \(text)")
        }
        var serverConfiguration = ServerConfiguration()
        serverConfiguration.serverID = "demo-nat"
        serverConfiguration.minimumHeartbeat = .milliseconds(10)
        let server = LongLinkTestServer(configuration: serverConfiguration, stores: { .inMemory() }) {
            var router = Router()
            router.register("echo", synchronous: { payload, _ in payload })
            return router
        }
        try await server.start()
        let proxy = FaultProxy(upstream: try server.endpoint)
        try await proxy.start()
        await proxy.setNATIdleTimeout(nat)

        let parameters = AdaptiveHeartbeat(
            start: nat / 10, step: nat / 4, maximum: nat * 2, successesBeforeStep: 1, answerTimeout: nat / 5)
        var configuration = ClientConfiguration(endpoints: [try proxy.endpoint])
        configuration.clientID = "demo-nat"
        configuration.heartbeatPolicy = .adaptive(parameters)
        configuration.network = .named("demo")
        configuration.backoff = Backoff(initial: .milliseconds(50), maximum: .seconds(1))
        let client = LongLinkClient(configuration: configuration)
        say("NAT forgets idle mappings after \(nat); adaptive heartbeat from \(parameters.start), steps of \(parameters.step)")

        var learned: HeartbeatSnapshot.Network?
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            var shown: Duration?
            let deadline = clock.now.advanced(by: duration)
            while clock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                if let interval = await client.heartbeatInterval, interval != shown {
                    shown = interval
                    say("heartbeat \(interval) in force (links lost so far: \(await client.statistics.deadLinks))")
                }
                learned = await client.learnedHeartbeat?.networks.first
                if let learned, learned.stableSince != nil, await client.heartbeatInterval != nil { break }
            }
            client.shutdown()
            for try await _ in group {}
        }
        let statistics = await client.statistics
        let forgotten = proxy.statistics.natMappingsForgotten
        await proxy.stop()
        await server.stop()
        guard let learned, learned.stableSince != nil else {
            out.line("learned nothing stable within \(duration) (links lost: \(statistics.deadLinks))")
            return ExitStatus.failure
        }
        out.line(
            "learned \(Duration.milliseconds(learned.intervalMilliseconds)) on \(learned.key) "
                + "(NAT \(nat)): stable; \(statistics.deadLinks) probe link(s) lost and replaced, "
                + "\(forgotten) mapping(s) forgotten by the NAT")
        return ExitStatus.success
    }
}
