import LongLinkCore
import LongLink
import LongLinkServer
import LongLinkTesting
import LongLinkTransport
import LongLinkWire

/// The servers of a soak run, each behind its own fault proxy: one server whose pushes are kept in
/// one in-memory store across restarts, or (with ``SoakConfiguration/fleet``) a fleet sharing its
/// stores; those run in this process, so the `work` method's runs are counted in one map, whichever
/// server ran them. With ``SoakConfiguration/dataDirectory``, one `serve --data-dir` in a child
/// process (``SoakChildServer``) that faults `kill -9`; its runs are counted from its runs log.
final class SoakServers: Sendable {
    static let principal = "soak"
    static let topic = "alerts"

    let members: [LongLinkTestServer]
    let proxies: [FaultProxy]
    let endpoints: [Endpoint]
    /// The single server's store, written straight into while that server restarts; nil in a fleet.
    private let store: InMemoryPushStore?
    /// The child-process server of `--data-dir`; nil for servers in this process.
    let child: SoakChildServer?
    /// Kills the Redis Cluster primary of the principal's slot; nil when the fleet is not on a cluster.
    let killPrimary: (@Sendable () async throws -> SoakFailover)?
    private let state: Locked<State>

    private struct State {
        /// Runs of each `work` payload (`req-N`), across every server.
        var executions: [String: Int] = [:]
        /// The member the client logged in on last: the one it is on.
        var clientServer = 0
        /// Members crashed and not restarted yet.
        var down: Set<Int> = []
    }

    private init(
        members: [LongLinkTestServer], proxies: [FaultProxy], store: InMemoryPushStore?, child: SoakChildServer? = nil,
        state: Locked<State>, killPrimary: (@Sendable () async throws -> SoakFailover)?
    ) throws {
        self.child = child
        self.killPrimary = killPrimary
        self.members = members
        self.proxies = proxies
        self.store = store
        self.state = state
        endpoints = try proxies.map { try $0.endpoint }
    }

    var isFleet: Bool { store == nil && child == nil }

    /// Starts the servers and their proxies.
    static func start(_ configuration: SoakConfiguration, credentials: SoakCredentials? = nil) async throws
        -> SoakServers
    {
        if let directory = configuration.dataDirectory {
            let child = try await SoakChildServer.start(directory: directory)
            let proxy = FaultProxy(upstream: .tcp(host: "127.0.0.1", port: child.port))
            do {
                try await proxy.start()
            } catch {
                await child.stop()
                throw error
            }
            return try SoakServers(
                members: [], proxies: [proxy], store: nil, child: child, state: Locked(State()), killPrimary: nil)
        }
        var serverConfiguration = ServerConfiguration()
        serverConfiguration.drainTimeout = .seconds(2)
        serverConfiguration.shutdownRetryAfter = .milliseconds(50)
        serverConfiguration.minimumHeartbeat = .milliseconds(50)
        serverConfiguration.tls = configuration.serverTLS
        let state = Locked(State())
        let store: InMemoryPushStore? =
            configuration.fleet == nil ? InMemoryPushStore(capacityPerPrincipal: 1_000_000) : nil
        // In a fleet `work` takes a while, so that crashes catch requests mid-execution.
        let workTime = configuration.fleet?.workDuration ?? .zero
        var members: [LongLinkTestServer] = []
        var proxies: [FaultProxy] = []
        do {
            for index in 0..<(configuration.fleet?.servers ?? 1) {
                let makeRouter: @Sendable () -> Router = {
                    router(server: index, workTime: workTime, state: state, credentials: credentials)
                }
                var memberConfiguration = serverConfiguration
                memberConfiguration.serverID = "soak-s\(index)"
                let member =
                    if let fleet = configuration.fleet {
                        LongLinkTestServer(configuration: memberConfiguration, stores: fleet.stores, router: makeRouter)
                    } else {
                        LongLinkTestServer(
                            configuration: memberConfiguration, stores: { ServerStores(pushes: store!) },
                            router: makeRouter)
                    }
                members.append(member)
                try await member.start()
                let proxy = FaultProxy(upstream: try member.endpoint)
                proxies.append(proxy)
                try await proxy.start()
            }
            return try SoakServers(
                members: members, proxies: proxies, store: store, state: state,
                killPrimary: configuration.fleet?.killPrimary)
        } catch {
            for proxy in proxies { await proxy.stop() }
            for member in members { await member.stop() }
            throw error
        }
    }

    private static func router(
        server index: Int, workTime: Duration, state: Locked<State>, credentials: SoakCredentials?
    ) -> Router {
        var router = Router()
        if let credentials {
            credentials.register(in: &router) { state.withLock { $0.clientServer = index } }
        } else {
            router.register("login") { payload, context in
                context.bind(principal: String(decoding: payload, as: UTF8.self))
                state.withLock { $0.clientServer = index }
                return []
            }
        }
        // Not idempotent by design: counted first, so a second run anywhere shows.
        router.register("work") { payload, _ in
            let key = String(decoding: payload, as: UTF8.self)
            state.withLock { $0.executions[key, default: 0] += 1 }
            if workTime > .zero { try await Task.sleep(for: workTime) }
            return payload
        }
        return router
    }

    /// How many times `work` ran with each payload.
    var executions: [String: Int] { child?.executions() ?? state.withLock { $0.executions } }

    /// How many times `work` ran with `payload` so far.
    func runs(of payload: String) -> Int { state.withLock { $0.executions[payload, default: 0] } }

    /// The member the client is on (it logged in there last).
    var clientServer: Int { state.withLock { $0.clientServer } }

    /// Stores one reliable push and returns its seq: through a running server (in a fleet, any
    /// one: the shared store delivers it wherever the client is), or straight into the single
    /// server's store while it restarts.
    func produce(_ payload: [UInt8]) async throws(LongLinkError) -> UInt64 {
        let down = state.withLock { $0.down }
        if let server = members.indices.lazy.filter({ !down.contains($0) }).compactMap({ self.members[$0].server })
            .first
        {
            return try await server.push(to: Self.principal, topic: Self.topic, payload: payload)
        }
        guard let store else {
            throw LongLinkError(code: .unavailable, message: "no server of the fleet runs")
        }
        return try store.append(PushAppend(principal: Self.principal, topic: Self.topic, payload: payload)).seq
    }

    /// Crashes the client's server (no GoAway, connections reset, handlers cancelled) and returns
    /// its index.
    func crashClientServer() async -> Int {
        if let child {
            await child.kill()
            return 0
        }
        let index = clientServer
        // Marked down first: the producer must not pick a server that is going away.
        state.withLock { _ = $0.down.insert(index) }
        await members[index].crash()
        return index
    }

    /// Starts member `index` again on its port after a crash.
    func restart(_ index: Int) async throws {
        if let child {
            try await child.start()
            return
        }
        try await members[index].start()
        state.withLock { _ = $0.down.remove(index) }
    }

    func stop() async {
        for proxy in proxies { await proxy.stop() }
        await child?.stop()
        for member in members { await member.stop() }
    }
}
