internal import LongLinkTransport
internal import LongLinkWire

/// The supervisor's knowledge of the endpoints: the list (static or from the app's provider), the
/// ``EndpointTable`` of their health, probing, and when to ask the provider again.
actor EndpointDirectory {
    let configuration: ClientConfiguration
    let loop: EventLoop
    private let clock: LoopClock
    private(set) var table: EndpointTable
    private var refreshedAt: ContinuousClock.Instant?
    private var random = SystemRandomNumberGenerator()
    /// The TLS context probes connect with (the client's, set when it starts).
    private var tls: TLSContext?
    /// Probes made, for ``ClientStatistics/probes``.
    private(set) var probesMade = 0

    init(configuration: ClientConfiguration, loop: EventLoop) {
        self.configuration = configuration
        self.loop = loop
        self.clock = LoopClock(configuration.clock)
        self.table = EndpointTable(policy: configuration.balancing, endpoints: configuration.endpoints)
    }

    var endpoints: [Endpoint] { table.endpoints }

    func setTLS(_ tls: TLSContext?) { self.tls = tls }

    // MARK: The list

    /// Whether the provider should be asked again now: never asked, no endpoint known, every
    /// endpoint failed, or the refresh interval passed.
    var refreshDue: Bool {
        guard configuration.endpointProvider != nil else { return false }
        guard let refreshedAt, !table.endpoints.isEmpty else { return true }
        let now = clock.now
        if table.allFailed(at: now) { return true }
        if let interval = configuration.balancing.refreshInterval, now - refreshedAt >= interval { return true }
        return false
    }

    /// When the refresh interval next asks the provider, if it will.
    var nextRefresh: ContinuousClock.Instant? {
        guard configuration.endpointProvider != nil, let interval = configuration.balancing.refreshInterval,
            let refreshedAt
        else { return nil }
        return refreshedAt.advanced(by: interval)
    }

    /// The changes the supervisor has looked at (``noteChanges(_:)``).
    private(set) var seen = ChangeCounters()

    /// What changed since the supervisor last looked, whether or not it was woken for it: the
    /// network or the app's list. Both count as seen from now on.
    func noteChanges(_ now: ChangeCounters) -> (network: Bool, list: Bool) {
        defer { seen = now }
        return (now.network != seen.network, now.list != seen.list)
    }

    /// Asks the provider when ``refreshDue`` or the network changed. Returns whether it asked.
    func refreshIfDue(networkChanged: Bool) async -> Bool {
        guard networkChanged || refreshDue else { return false }
        await refresh()
        return true
    }

    /// Asks the provider for the list; keeps the current list when it throws or returns nothing.
    /// Returns true when the list changed.
    @discardableResult
    func refresh() async -> Bool {
        guard let provider = configuration.endpointProvider else { return false }
        refreshedAt = clock.now
        let before = table.endpoints
        do {
            let provided = try await provider()
            if !provided.isEmpty {
                table.replace(provided)
            } else {
                configuration.logger?(LogRecord(bounded: .warning, "the endpoint provider returned no endpoints"))
            }
        } catch {
            configuration.logger?(LogRecord(bounded: .warning, "the endpoint provider failed: \(error)"))
        }
        if table.endpoints.isEmpty { table.replace(configuration.endpoints) }
        return table.endpoints != before
    }

    /// Replaces the list (``LongLinkClient/setEndpoints(_:)``).
    func replace(_ endpoints: [Endpoint]) {
        table.replace(endpoints)
    }

    // MARK: Outcomes and choices

    func ranking() -> [Endpoint] {
        table.ranking(at: clock.now, using: &random)
    }

    func recordFailure(_ endpoint: Endpoint) {
        table.recordFailure(endpoint, at: clock.now)
    }

    func recordSuccess(_ endpoint: Endpoint, loadPermille: Int) {
        table.recordSuccess(endpoint)
        table.recordLoad(endpoint, permille: loadPermille, at: clock.now)
    }

    func record(_ endpoint: Endpoint, roundTrip: Duration?, loadPermille: Int?) {
        let now = clock.now
        if let roundTrip { table.recordRoundTrip(endpoint, roundTrip, at: now) }
        if let loadPermille { table.recordLoad(endpoint, permille: loadPermille, at: now) }
    }

    func cost(_ endpoint: Endpoint) -> Double { table.cost(endpoint, at: clock.now) }

    /// A server said `GoAway` with reconnect: it is set aside for its retry-after, and at least
    /// the first ban's length (not counted as a failure). Returns the retry-after, bounded.
    @discardableResult
    func setAside(_ endpoint: Endpoint, after goAway: Frame.GoAway) -> Duration {
        let retryAfter = ServerBounds.retryAfter(milliseconds: goAway.retryAfterMilliseconds)
        table.setAside(endpoint, until: clock.now.advanced(by: max(retryAfter, configuration.balancing.banInitial)))
        return retryAfter
    }

    /// The cheapest measured endpoint other than `current` that is not banned (and reports less
    /// than `loadBelow`, when given), with its cost.
    func bestAlternative(to current: Endpoint, loadBelow: Int? = nil) -> (endpoint: Endpoint, cost: Double)? {
        let now = clock.now
        let limit = loadBelow.map { Double($0) / 1000 } ?? .infinity
        return table.endpoints
            .filter { $0 != current && !table.isBanned($0, at: now) && table[$0]?.roundTrip.estimate != nil }
            .filter { table.load($0, at: now) < limit }
            .map { (endpoint: $0, cost: table.cost($0, at: now)) }
            .min { $0.cost < $1.cost }
    }

    /// Each endpoint's state and cost now, for ``LongLinkClient/endpointStatus``.
    func status() -> [EndpointProbe] {
        let now = clock.now
        return table.endpoints.map { endpoint in
            let health = table[endpoint]
            let known = health?.roundTrip.estimate != nil
            return EndpointProbe(
                endpoint: endpoint,
                state: table.isBanned(endpoint, at: now)
                    ? .banned : ((health?.consecutiveFailures ?? 0) > 0 ? .failed : .reachable),
                roundTrips: health?.roundTrip.estimate.map { [.seconds($0)] } ?? [],
                loadPermille: health?.load?.permille, cost: known ? table.cost(endpoint, at: now) : nil)
        }
    }

    // MARK: Probing

    /// Probes `endpoints` (all known ones when nil) at once, at most
    /// ``Balancing/probeConcurrency`` at a time, and records what each probe found.
    func probe(_ endpoints: [Endpoint]? = nil) async -> ProbeReport {
        let targets = endpoints ?? table.endpoints
        let now = clock.now
        let results = await Self.probeAll(
            targets.filter { !table.isBanned($0, at: now) }, configuration: configuration, tls: tls, clock: clock,
            loop: loop)
        probesMade += results.count
        var probes: [EndpointProbe] = []
        for endpoint in targets {
            guard var probe = results[endpoint] else {
                probes.append(EndpointProbe(endpoint: endpoint, state: .banned))
                continue
            }
            if probe.state == .reachable {
                table.recordSuccess(endpoint)
                for sample in probe.roundTrips { table.recordRoundTrip(endpoint, sample, at: clock.now) }
                if let load = probe.loadPermille { table.recordLoad(endpoint, permille: load, at: clock.now) }
                probe.cost = table.cost(endpoint, at: clock.now)
            } else {
                table.recordFailure(endpoint, at: clock.now)
            }
            probes.append(probe)
        }
        let chosen = probes.contains { $0.state == .reachable } ? ranking().first : nil
        return ProbeReport(probes: probes, chosen: chosen)
    }

    /// The probes themselves: connect, `Hello`/`Welcome`, then ``Balancing/probePings`` pings, all
    /// within ``Balancing/probeTimeout``.
    static func probeAll(
        _ endpoints: [Endpoint], configuration: ClientConfiguration, tls: TLSContext?, clock: LoopClock,
        loop: EventLoop
    ) async -> [Endpoint: EndpointProbe] {
        let policy = configuration.balancing
        return await withTaskGroup(of: EndpointProbe.self) { group in
            var results: [Endpoint: EndpointProbe] = [:]
            var pending = endpoints[...]
            var running = 0
            while running < policy.probeConcurrency, let next = pending.popFirst() {
                running += 1
                group.addTask { await probeOne(next, configuration: configuration, tls: tls, clock: clock, loop: loop) }
            }
            while let result = await group.next() {
                results[result.endpoint] = result
                if let next = pending.popFirst() {
                    group.addTask {
                        await probeOne(next, configuration: configuration, tls: tls, clock: clock, loop: loop)
                    }
                }
            }
            return results
        }
    }

    static func probeOne(
        _ endpoint: Endpoint, configuration: ClientConfiguration, tls: TLSContext?, clock: LoopClock, loop: EventLoop
    ) async -> EndpointProbe {
        let policy = configuration.balancing
        let started = clock.now
        let deadline = started.advanced(by: policy.probeTimeout)
        func remaining() -> Duration { max(.milliseconds(1), deadline - clock.now) }
        var hello = ClientCore.hello(for: configuration)
        hello.metadata["longlink.probe"] = "1"
        let pending: PendingLink
        do {
            pending = try await PendingLink.open(
                endpoint, hello: hello, options: configuration.connectionOptions, timeout: policy.probeTimeout,
                handshakeTimeout: remaining(), maxFrameBytes: configuration.maxFrameBytes, tls: tls, clock: clock,
                on: loop)
        } catch {
            return EndpointProbe(endpoint: endpoint, state: state(of: error), error: error)
        }
        defer { pending.close(error: nil) }
        let welcome = await pending.welcome
        var probe = EndpointProbe(
            endpoint: endpoint, state: .reachable, loadPermille: welcome.map { Int($0.loadPermille) },
            serverID: welcome?.serverID)
        for _ in 0..<policy.probePings {
            do {
                let pong = try await pending.ping(timeout: remaining())
                probe.roundTrips.append(pong.roundTrip)
                probe.loadPermille = pong.loadPermille
            } catch {
                let error = Supervisor.wrap(error)
                var failed = EndpointProbe(
                    endpoint: endpoint, state: state(of: error), roundTrips: probe.roundTrips,
                    loadPermille: probe.loadPermille, serverID: probe.serverID, error: error)
                failed.unmatchedPongs = await pending.unmatchedPongs
                return failed
            }
        }
        probe.unmatchedPongs = await pending.unmatchedPongs
        return probe
    }

    static func state(of error: LongLinkError) -> EndpointProbe.State {
        switch error.code {
        case .connectionRefused: .refused
        case .connectTimeout, .deadlineExceeded: .timedOut
        default: .failed
        }
    }
}
