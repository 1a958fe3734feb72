import LongLinkCore
import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport

/// Several real servers on loopback, each behind its own fault proxy (for latency), each reporting
/// a load the test sets, each counting the requests it ran by payload.
final class Fleet: Sendable {
    final class Member: Sendable {
        let id: String
        let server: LongLinkTestServer
        private let load: Locked<UInt32>
        private let counts: Locked<[String: Int]>

        init(id: String) {
            let load = Locked<UInt32>(0)
            let counts = Locked<[String: Int]>([:])
            var configuration = ServerConfiguration()
            configuration.serverID = id
            configuration.loadReporter = { load.withLock { $0 } }
            self.id = id
            self.load = load
            self.counts = counts
            server = LongLinkTestServer(configuration: configuration) {
                var router = Router()
                router.register("server") { _, _ in Array(id.utf8) }
                router.register("login") { payload, context in
                    context.bind(principal: String(decoding: payload, as: UTF8.self))
                    return []
                }
                router.register("run") { payload, _ in
                    counts.withLock { $0[String(decoding: payload, as: UTF8.self), default: 0] += 1 }
                    return Array(id.utf8)
                }
                // As `run`, taking 250 ms: requests overlap whatever the test does meanwhile.
                router.register("work") { payload, _ in
                    counts.withLock { $0[String(decoding: payload, as: UTF8.self), default: 0] += 1 }
                    try await Task.sleep(for: .milliseconds(250))
                    return Array(id.utf8)
                }
                return router
            }
        }

        /// The load this server reports from now on.
        func setLoad(_ permille: UInt32) { load.withLock { $0 = permille } }

        /// How many times each payload of `run` and `work` executed here.
        var runs: [String: Int] { counts.withLock { $0 } }
    }

    let members: [Member]
    let proxies: [FaultProxy]
    /// Where clients connect: each member's proxy.
    let endpoints: [Endpoint]

    private init(members: [Member], proxies: [FaultProxy], endpoints: [Endpoint]) {
        self.members = members
        self.proxies = proxies
        self.endpoints = endpoints
    }

    /// Starts `count` servers, each behind a proxy adding `latencies[i]` each way.
    static func start(_ count: Int, latencies: [Duration] = [], jitter: Duration = .zero) async throws -> Fleet {
        var members: [Member] = []
        var proxies: [FaultProxy] = []
        var endpoints: [Endpoint] = []
        for index in 0..<count {
            let member = Member(id: "s\(index)")
            try await member.server.start()
            let proxy = FaultProxy(upstream: try member.server.endpoint)
            try await proxy.start()
            endpoints.append(try proxy.endpoint)
            let latency = index < latencies.count ? latencies[index] : .zero
            if latency > .zero || jitter > .zero { await proxy.apply(.latency(latency, jitter: jitter)) }
            members.append(member)
            proxies.append(proxy)
        }
        return Fleet(members: members, proxies: proxies, endpoints: endpoints)
    }

    func member(_ id: String) -> Member { members.first { $0.id == id }! }

    func endpoint(of id: String) -> Endpoint { endpoints[members.firstIndex { $0.id == id }!] }

    /// Every execution of `run` across the fleet, by payload.
    var runs: [String: Int] {
        members.reduce(into: [:]) { total, member in
            for (key, count) in member.runs { total[key, default: 0] += count }
        }
    }

    func stop() async {
        for proxy in proxies { await proxy.stop() }
        for member in members { await member.server.stop() }
    }
}

extension ClientConfiguration {
    /// A client of the fleet: short timeouts, fast backoff.
    static func forFleet(_ endpoints: [Endpoint]) -> ClientConfiguration {
        var configuration = ClientConfiguration(endpoints: endpoints)
        configuration.backoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(200))
        configuration.connectTimeout = .seconds(2)
        configuration.defaultTimeout = .seconds(10)
        configuration.balancing.probeTimeout = .seconds(2)
        return configuration
    }
}
