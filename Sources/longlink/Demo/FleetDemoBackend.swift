import LongLinkCore
import Foundation
import LongLink
import LongLinkRedis
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

/// `longlink demo --fleet N`: N servers sharing reliable pushes and the de-dup window in one local
/// `redis-server` (started here; with `--redis-cluster`, a local Redis Cluster), each behind its own
/// fault proxy. The demo crashes the server
/// the client is on and restarts it later, besides the network faults.
///
/// Every server runs in this process, so executions are counted in one map by request id: a
/// request that ran on two servers (a resend the shared de-dup failed to stop) shows as
/// "executed twice".
final class FleetDemoBackend: DemoBackend {
    let endpoints: [Endpoint]
    let banner: String
    private let redis: LocalFleetRedis
    private let members: [LongLinkTestServer]
    private let proxies: [FaultProxy]
    private let service: DemoService
    private let feed: DemoFeed
    private let state: Locked<State>

    private struct State {
        /// Runs of each request id, across the fleet (the client's ids are unique).
        var executions: [String: Int] = [:]
        /// The server the client logged in on last: the one it is on.
        var clientServer: Int?
        /// A server crashed and not yet restarted.
        var down: Int?
        var crashes = 0
        var restarts = 0
    }

    /// The methods whose runs are counted: the requests the demo makes.
    static let countedMethods = ["echo", "room.say"]

    /// Starts redis-server (a cluster of six when `cluster` is true), then `count` servers on it
    /// (s0, s1, …) and their proxies. Throws `LocalRedisServer.Missing` when redis-server is not
    /// installed.
    init(
        count: Int, cluster: Bool = false, configuration base: ServerConfiguration,
        feed feedConfiguration: DemoFeed.Configuration
    ) async throws {
        let redis = try await LocalFleetRedis.start(cluster: cluster)
        self.redis = redis
        let stores = redis.stores(keyPrefix: "demo:")
        let state = Locked(State())
        // One service for the fleet, as one database behind every server: rooms and watch lists
        // follow the client wherever it logs in.
        let service = DemoService()
        var members: [LongLinkTestServer] = []
        var proxies: [FaultProxy] = []
        do {
            for index in 0..<count {
                var configuration = base
                configuration.serverID = "s\(index)"
                service.prepare(&configuration)
                let member = LongLinkTestServer(
                    configuration: configuration, stores: stores
                ) { Self.router(of: service, server: index, state: state) }
                members.append(member)
                let address = try await member.start()
                let proxy = FaultProxy(upstream: .tcp(host: address.host, port: address.port ?? 0))
                proxies.append(proxy)
                try await proxy.start()
            }
        } catch {
            for proxy in proxies { await proxy.stop() }
            for member in members { await member.stop() }
            await redis.stop()
            throw error
        }
        self.members = members
        self.proxies = proxies
        self.state = state
        self.service = service
        feed = DemoFeed(service: service, configuration: feedConfiguration)
        endpoints = try proxies.map { try $0.endpoint }
        let tls = base.tls != nil ? " (TLS)" : ""
        banner =
            "\(count) servers\(tls) sharing \(redis); clients "
            + "connect through fault proxies on "
            + endpoints.map { "\($0)" }.joined(separator: ", ")
    }

    /// The demo service's router, with the runs of the demo's requests counted and the server of
    /// each login noted.
    private static func router(of service: DemoService, server index: Int, state: Locked<State>) -> Router {
        var router = service.router()
        for method in countedMethods {
            guard let handler = router.handler(for: method) else { continue }
            router.register(method) { payload, context in
                state.withLock { $0.executions[context.requestID, default: 0] += 1 }
                return try await handler(payload, context)
            }
        }
        if let login = router.handler(for: "login") {
            router.register("login") { payload, context in
                let reply = try await login(payload, context)
                state.withLock { $0.clientServer = index }
                return reply
            }
        }
        return router
    }

    /// The first running server other than the client's (so alerts cross servers through Redis),
    /// else the client's.
    private func producer() -> LongLinkServer? {
        let (clientServer, down) = state.withLock { ($0.clientServer, $0.down) }
        let order = members.indices.filter { $0 != clientServer } + [clientServer].compactMap { $0 }
        return order.lazy.filter { $0 != down }.compactMap { self.members[$0].server }.first
    }

    func feedStep() async -> DemoFeed.StepReport? {
        guard let server = producer() else { return nil }
        // room.say publishes through the attached server: any running one reaches the member.
        service.attach(to: server)
        let down = state.withLock { $0.down }
        // Quotes go out on every server (each reaches its own connections only, so the client gets
        // each once); alerts are published once, into Redis.
        let running = members.indices.filter { $0 != down }.compactMap { members[$0].server }
        return await feed.step(server: server, quoteServers: running)
    }

    func faults() -> [DemoFault] {
        [
            DemoFault(.seconds(3), { [self] in "crash s\(clientServer()), the server the client is on (no GoAway)" }) {
                [self] in await crashClientServer()
            },
            DemoFault(.seconds(3), { [self] in "cut both sides of the connection to s\(clientServer())" }) {
                [self] in await proxies[clientServer()].apply(.cut)
            },
            DemoFault(.seconds(2), { [self] in "restart s\(downServer() ?? 0) on its port" }) { [self] in
                await restartDownServer()
            },
            DemoFault(.seconds(3), { [self] in "black hole for 2 s to s\(clientServer()) (a half-open link)" }) {
                [self] in
                let proxy = proxies[clientServer()]
                await proxy.apply(.blackHole(.both))
                try? await Task.sleep(for: .seconds(2))
                // What the hole swallowed is gone: a link that lived through it must not carry on.
                await proxy.apply(.cut)
                await proxy.apply(.restoreForwarding(.both))
            },
            DemoFault(.seconds(3), { [self] in "one-byte writes for 2 s to s\(clientServer())" }) { [self] in
                let proxy = proxies[clientServer()]
                await proxy.apply(.splitWrites(into: 1))
                try? await Task.sleep(for: .seconds(2))
                await proxy.apply(.splitWrites(into: nil))
            },
            DemoFault(.seconds(3), { [self] in "s\(clientServer()) sends the session GoAway (UNAVAILABLE, reconnect after 100 ms)" }) {
                [self] in
                _ = members[clientServer()].server?.kick(
                    principal: "alice", code: .unavailable, reason: "session moved", reconnect: true,
                    retryAfter: .milliseconds(100))
            },
            DemoFault(.seconds(3), { [self] in "crash s\(clientServer()), the server the client is on" }) { [self] in
                await crashClientServer()
            },
            DemoFault(.seconds(3), { [self] in "restart s\(downServer() ?? 0) on its port" }) { [self] in
                await restartDownServer()
            },
        ]
    }

    private func clientServer() -> Int { state.withLock { $0.clientServer } ?? 0 }
    private func downServer() -> Int? { state.withLock { $0.down } }

    private func crashClientServer() async {
        let index = clientServer()
        // Marked down first: the feed must not pick a server that is going away.
        state.withLock {
            $0.down = index
            $0.crashes += 1
        }
        await members[index].crash()
    }

    private func restartDownServer() async {
        guard let index = downServer() else { return }
        guard (try? await members[index].start()) != nil else { return }
        state.withLock {
            $0.down = nil
            $0.restarts += 1
        }
    }

    /// Request ids that ran more than once across the fleet.
    var executedTwice: Int { state.withLock { $0.executions.values.filter { $0 > 1 }.count } }

    func summaryRows() -> (rows: [[String]], failed: Bool) {
        let (crashes, restarts, executed) = state.withLock { ($0.crashes, $0.restarts, $0.executions.count) }
        let twice = executedTwice
        return (
            [
                ["requests executed (distinct ids)", "\(executed)"],
                ["executed twice", "\(twice)"],
                ["servers in the fleet", "\(members.count)"],
                ["servers crashed / restarted", "\(crashes) / \(restarts)"],
            ], twice > 0
        )
    }

    func stop() async {
        for proxy in proxies { await proxy.stop() }
        for member in members { await member.stop() }
        await redis.stop()
    }

    /// Kills every redis-server on SIGINT or SIGTERM, so that an interrupted demo leaves none behind.
    func stopOnSignals() -> SignalWatcher { redis.stopOnSignals() }
}
