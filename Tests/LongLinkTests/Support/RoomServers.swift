import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Synchronization

/// Servers that keep rooms, each behind its own fault proxy and all sharing one push store (so a
/// reliable push stored on one is delivered by another after a failover). Each reports what it
/// ran to `events`, naming itself: `enter 42 alice s0`, `leave 42 s0`, `record x s0`,
/// `flaky s0`.
final class RoomServers: Sendable {
    /// What the servers' handlers share: the test's view of them.
    final class State: Sendable {
        let events = Mailbox<String>()
        /// While set, `flaky` fails with `unavailable`.
        let flakyFails = Atomic<Bool>(false)
        /// The load each server reports, by id.
        let loads = Mutex<[String: UInt32]>([:])
    }

    /// The reply to `room.enter`.
    struct RoomReply: Codable, Sendable, Equatable {
        var room: Int
        var members: [String]
        var server: String
    }

    /// The request of `room.enter` and `room.leave`.
    struct RoomRequest: Codable, Sendable {
        var room: Int
        var user: String?
    }

    let state: State
    let servers: [LongLinkTestServer]
    let proxies: [FaultProxy]
    /// Where clients connect: each server's proxy.
    let endpoints: [Endpoint]

    var events: Mailbox<String> { state.events }

    private init(state: State, servers: [LongLinkTestServer], proxies: [FaultProxy], endpoints: [Endpoint]) {
        self.state = state
        self.servers = servers
        self.proxies = proxies
        self.endpoints = endpoints
    }

    /// Starts `count` servers, `s0`, `s1`..., the proxy of server i adding `latencies[i]` each way.
    static func start(_ count: Int, latencies: [Duration] = []) async throws -> RoomServers {
        let state = State()
        let store = InMemoryPushStore()
        var servers: [LongLinkTestServer] = []
        var proxies: [FaultProxy] = []
        var endpoints: [Endpoint] = []
        for index in 0..<count {
            let id = "s\(index)"
            var configuration = ServerConfiguration()
            configuration.serverID = id
            configuration.loadReporter = { state.loads.withLock { $0[id] ?? 0 } }
            let server = LongLinkTestServer(configuration: configuration, stores: { ServerStores(pushes: store) }) {
                router(id: id, state: state)
            }
            try await server.start()
            let proxy = FaultProxy(upstream: try server.endpoint)
            try await proxy.start()
            if index < latencies.count, latencies[index] > .zero { await proxy.apply(.latency(latencies[index])) }
            servers.append(server)
            proxies.append(proxy)
            endpoints.append(try proxy.endpoint)
        }
        return RoomServers(state: state, servers: servers, proxies: proxies, endpoints: endpoints)
    }

    private static func router(id: String, state: State) -> Router {
        var router = Router()
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return Array("welcome".utf8)
        }
        router.register("room.enter", request: RoomRequest.self) { request, context in
            let user = request.user ?? context.principal ?? "anonymous"
            state.events.put("enter \(request.room) \(user) \(id)")
            return RoomReply(room: request.room, members: [user], server: id)
        }
        router.register("room.leave", request: RoomRequest.self) { request, _ in
            state.events.put("leave \(request.room) \(id)")
            return RoomReply(room: request.room, members: [], server: id)
        }
        router.register("record") { payload, _ in
            state.events.put("record \(String(decoding: payload, as: UTF8.self)) \(id)")
            return payload
        }
        router.register("flaky") { _, _ in
            state.events.put("flaky \(id)")
            if state.flakyFails.load(ordering: .relaxed) {
                throw LongLinkError(code: .unavailable, message: "flaky is down")
            }
            return Array(id.utf8)
        }
        return router
    }

    /// Server `id`'s running instance.
    func server(_ index: Int) -> LongLinkServer? { servers[index].server }

    /// The load server `id` reports from now on.
    func setLoad(_ id: String, _ permille: UInt32) { state.loads.withLock { $0[id] = permille } }

    /// The next event, within 20 s, passing over those that start with `skipping`.
    func next(skipping: String? = nil) async throws -> String {
        while true {
            let event = try await events.next(within: .seconds(20), "a server event")
            if let skipping, event.hasPrefix(skipping) { continue }
            return event
        }
    }

    func stop() async {
        for proxy in proxies { await proxy.stop() }
        for server in servers { await server.stop() }
    }
}

extension ClientConfiguration {
    /// A client of room servers: logs in as `user`, short timeouts, fast backoff, no re-probing.
    static func forRooms(_ endpoints: [Endpoint], user: String = "alice") -> ClientConfiguration {
        var configuration = ClientConfiguration(endpoints: endpoints)
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        configuration.connectTimeout = .seconds(2)
        configuration.defaultTimeout = .seconds(10)
        configuration.balancing.probeTimeout = .seconds(2)
        configuration.balancing.migration.reprobeInterval = nil
        configuration.login = { session in _ = try await session.request("login", payload: Array(user.utf8)) }
        return configuration
    }
}
