import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Synchronization
import Testing

@testable import LongLinkRedis

/// Three (or more) real `LongLinkServer`s sharing one real Redis through ``ServerStores/redis(_:)``
/// (or a real cluster through ``ServerStores/redisCluster(_:lease:capacityPerPrincipal:bytesPerPrincipal:)``),
/// each behind its own fault proxy. Their `slow` method counts its executions in Redis (so the
/// count is the fleet's, whichever server ran it) before it sleeps; `login` binds the principal;
/// `echo` answers its payload; `presence` answers how many sessions the principal in its payload
/// has across the fleet (``RequestContext/presence(of:)``).
final class RedisFleet: Sendable {
    let members: [LongLinkTestServer]
    let proxies: [FaultProxy]
    /// Where clients connect: each member's proxy.
    let endpoints: [Endpoint]
    /// Lines the handlers report: `started <payload> on <server>`.
    let events: Mailbox<String>
    /// Lines the servers log (``ServerConfiguration/logger``).
    let logs: Mailbox<String>
    /// The tests' own connection to Redis, for the execution counts.
    let counter: any RedisCommandRunner
    let prefix: String

    private init(
        members: [LongLinkTestServer], proxies: [FaultProxy], events: Mailbox<String>, logs: Mailbox<String>,
        counter: any RedisCommandRunner, prefix: String
    ) throws {
        self.members = members
        self.proxies = proxies
        self.endpoints = try proxies.map { try $0.endpoint }
        self.events = events
        self.logs = logs
        self.counter = counter
        self.prefix = prefix
    }

    /// Starts `count` servers named s0, s1, … on `redis`; `slow` sleeps `slowFor`. Their claims
    /// follow `lease`, and last at first at most `termLimit` (then as long as they are renewed).
    /// `commandTimeout`, when given, replaces the test Redis's short one for the servers' stores;
    /// `budgets` bound each tenant in the de-dup window; sessions stay in the fleet's presence
    /// `presenceLease` unrenewed.
    static func start(
        on redis: RedisServerProcess, count: Int = 3, slowFor: Duration = .milliseconds(600),
        lease: ClaimLease = ClaimLease(), termLimit: Duration? = nil, commandTimeout: Duration? = nil,
        budgets: RedisDedupeBudgets = RedisDedupeBudgets(), presenceLease: Duration = .seconds(30)
    ) async throws -> RedisFleet {
        let prefix = "fleet-\(UInt32.random(in: 0...UInt32.max)):"
        var shared = redis.configuration
        shared.keyPrefix = prefix
        shared.dedupeBudgets = budgets
        if let commandTimeout { shared.commandTimeout = commandTimeout }
        let redisConfiguration = shared
        return try await start(
            count: count, slowFor: slowFor, presenceLease: presenceLease, prefix: prefix,
            counter: RedisClient(configuration: redisConfiguration)
        ) {
            ServerStores(
                pushes: try RedisPushStore(configuration: redisConfiguration),
                dedupe: try RedisDedupeStore(
                    configuration: redisConfiguration, lease: lease,
                    pollIntervals: (.milliseconds(50), .milliseconds(500)), termLimit: termLimit))
        }
    }

    /// Starts `count` servers named s0, s1, … on `cluster`, each through
    /// ``ServerStores/redisCluster(_:lease:capacityPerPrincipal:bytesPerPrincipal:)`` with
    /// `durability`; `slow` sleeps `slowFor`; sessions stay in the fleet's presence `presenceLease`
    /// unrenewed.
    static func start(
        onCluster cluster: RedisClusterProcess, count: Int = 2, slowFor: Duration = .milliseconds(600),
        durability: RedisDurability = .asynchronous, presenceLease: Duration = .seconds(30)
    ) async throws -> RedisFleet {
        let prefix = "fleet-\(UInt32.random(in: 0...UInt32.max)):"
        let seeds = cluster.seeds.map { seed in
            var seed = seed
            seed.keyPrefix = prefix
            seed.durability = durability
            return seed
        }
        return try await start(
            count: count, slowFor: slowFor, presenceLease: presenceLease, prefix: prefix,
            counter: RedisClusterClient(seeds: seeds)
        ) { try .redisCluster(seeds) }
    }

    private static func start(
        count: Int, slowFor: Duration, presenceLease: Duration, prefix: String, counter: any RedisCommandRunner,
        stores: @escaping @Sendable () throws -> ServerStores
    ) async throws -> RedisFleet {
        let events = Mailbox<String>()
        let logs = Mailbox<String>()
        var members: [LongLinkTestServer] = []
        var proxies: [FaultProxy] = []
        for index in 0..<count {
            let id = "s\(index)"
            var configuration = ServerConfiguration()
            configuration.serverID = id
            configuration.drainTimeout = .seconds(2)
            configuration.logger = { logs.put($0) }
            configuration.presenceLease = presenceLease
            let member = LongLinkTestServer(
                configuration: configuration,
                stores: stores
            ) {
                var router = Router()
                router.register("server") { _, _ in Array(id.utf8) }
                router.register("echo") { payload, _ in payload }
                router.register("presence") { payload, context in
                    let presence = try await context.presence(of: String(decoding: payload, as: UTF8.self))
                    return Array(String(presence.count).utf8)
                }
                router.register("login") { payload, context in
                    context.bind(principal: String(decoding: payload, as: UTF8.self))
                    return Array(id.utf8)
                }
                // One client at a time for the principal, across the fleet.
                router.register("login.exclusive") { payload, context in
                    context.bind(principal: String(decoding: payload, as: UTF8.self), exclusive: true)
                    return Array(id.utf8)
                }
                // Not idempotent: counted in Redis first, then 600 ms of work.
                router.register("slow") { payload, _ in
                    let name = String(decoding: payload, as: UTF8.self)
                    _ = try await counter.run(RedisCommand("INCR", prefix + "runs:" + name).keyed(1..<2))
                    events.put("started \(name) on \(id)")
                    try await Task.sleep(for: slowFor)
                    return Array(id.utf8)
                }
                return router
            }
            try await member.start()
            let proxy = FaultProxy(upstream: try member.endpoint)
            try await proxy.start()
            members.append(member)
            proxies.append(proxy)
        }
        return try RedisFleet(
            members: members, proxies: proxies, events: events, logs: logs, counter: counter, prefix: prefix)
    }

    func server(_ index: Int) throws -> LongLinkServer {
        guard let server = members[index].server else { throw ConditionTimedOut(what: "server s\(index) running") }
        return server
    }

    /// How many times `slow` ran with this payload, across the fleet.
    func runs(_ name: String) async throws -> Int {
        let reply = try await counter.run(RedisCommand("GET", prefix + "runs:" + name).keyed(1..<2))
        return Int(reply.string ?? "0") ?? 0
    }

    /// How many pushes of `principal` wait in Redis for an acknowledgement.
    func unacknowledged(_ principal: String) async throws -> Int {
        let reply = try await counter.run(
            RedisCommand("XLEN", RedisKeys(prefix: prefix).stream(principal: principal)).keyed(1..<2))
        return Int(reply.int64 ?? -1)
    }

    /// Member `index` becomes unreachable, as a server whose network died: its connections are
    /// reset and new ones refused; the server process itself runs on.
    func cutOff(_ index: Int) async {
        await proxies[index].refuseConnections(reset: true)
        await proxies[index].apply(.reset)
    }

    func stop() async {
        for proxy in proxies { await proxy.stop() }
        for member in members { await member.stop() }
        await counter.shutdown()
    }
}

/// A client logged in on s0, with s1 as the next endpoint once it is connected (so that it starts
/// on s0 whatever a probe would measure, and fails over to s1).
func onFirstServer(
    _ fleet: RedisFleet, as user: String, _ body: @escaping @Sendable (LongLinkClient) async throws -> Void
) async throws {
    try await withLongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: user)) { client in
        #expect(try await client.request("server") == bytes("s0"))
        await client.setEndpoints([fleet.endpoints[0], fleet.endpoints[1]])
        try await body(client)
    }
}

extension ClientConfiguration {
    /// A client of the Redis fleet, logged in as `user` (nil: no login): fast backoff, short probes.
    static func forRedisFleet(
        _ endpoints: [Endpoint], user: String?, exclusive: Bool = false, clientID: String? = nil
    ) -> ClientConfiguration {
        var configuration = ClientConfiguration(endpoints: endpoints)
        if let clientID { configuration.clientID = clientID }
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        configuration.connectTimeout = .seconds(2)
        configuration.defaultTimeout = .seconds(10)
        configuration.balancing.probeTimeout = .seconds(1)
        guard let user else { return configuration }
        let method = exclusive ? "login.exclusive" : "login"
        configuration.login = { session in _ = try await session.request(method, payload: Array(user.utf8)) }
        return configuration
    }
}

/// Runs `client` in a task; `ended` gets how its `run()` ended (nil: without an error), to be
/// waited for with a bound.
func running(_ client: LongLinkClient) -> (run: Task<Void, Never>, ended: Mailbox<LongLinkError?>) {
    let ended = Mailbox<LongLinkError?>()
    let run = Task {
        do {
            try await client.run()
            ended.put(nil)
        } catch {
            ended.put(error as? LongLinkError ?? LongLinkError(code: .unknown, message: "\(error)"))
        }
    }
    return (run, ended)
}
