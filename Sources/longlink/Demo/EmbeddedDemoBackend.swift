import LongLink
import LongLinkServer
import LongLinkTesting

/// `longlink demo`'s default: one embedded server (restartable, pushes kept in one in-memory
/// store across restarts) behind the fault proxy. Needs nothing outside the process.
final class EmbeddedDemoBackend: DemoBackend {
    let endpoints: [Endpoint]
    let banner: String
    private let harness: LongLinkTestServer
    private let proxy: FaultProxy
    private let service: DemoService
    private let feed: DemoFeed

    /// Starts the server and its proxy.
    init(configuration: ServerConfiguration, feed feedConfiguration: DemoFeed.Configuration) async throws {
        let service = DemoService()
        var configuration = configuration
        service.prepare(&configuration)
        let store = InMemoryPushStore(capacityPerPrincipal: 100_000)
        harness = LongLinkTestServer(configuration: configuration, stores: { ServerStores(pushes: store) }) {
            service.router()
        }
        let serverAddress = try await harness.start()
        proxy = FaultProxy(upstream: .tcp(host: serverAddress.host, port: serverAddress.port ?? 0))
        let proxyAddress = try await proxy.start()
        endpoints = [.tcp(host: proxyAddress.host, port: proxyAddress.port ?? 0)]
        banner =
            "demo server on \(serverAddress)\(configuration.tls != nil ? " (TLS)" : ""), clients connect through the "
            + "fault proxy on \(proxyAddress)"
        self.service = service
        feed = DemoFeed(service: service, configuration: feedConfiguration)
    }

    func feedStep() async -> DemoFeed.StepReport? {
        guard let server = harness.server else { return nil }
        service.attach(to: server)  // a restart brings a new server instance
        return await feed.step(server: server)
    }

    func faults() -> [DemoFault] {
        let proxy = self.proxy
        let harness = self.harness
        return [
            DemoFault(.seconds(4), "cut both sides of the connection") { await proxy.apply(.cut) },
            DemoFault(.seconds(4), "black hole for 2 s (no FIN, no RST: a half-open link)") {
                await proxy.apply(.blackHole(.both))
                try? await Task.sleep(for: .seconds(2))
                // What the hole swallowed is gone: a link that lived through it must not carry on.
                await proxy.apply(.cut)
                await proxy.apply(.restoreForwarding(.both))
            },
            DemoFault(.seconds(3), "one-byte writes for 2 s") {
                await proxy.apply(.splitWrites(into: 1))
                try? await Task.sleep(for: .seconds(2))
                await proxy.apply(.splitWrites(into: nil))
            },
            DemoFault(.seconds(3), "server restart (GoAway, then a new process on the same port)") {
                _ = try? await harness.restart(.graceful)
            },
            DemoFault(.seconds(4), "server sends the session GoAway (UNAVAILABLE, reconnect after 100 ms)") {
                _ = harness.server?.kick(
                    principal: "alice", code: .unavailable, reason: "session moved", reconnect: true,
                    retryAfter: .milliseconds(100))
            },
        ]
    }

    func summaryRows() -> (rows: [[String]], failed: Bool) { ([], false) }

    func stop() async {
        await proxy.stop()
        await harness.stop()
    }
}
