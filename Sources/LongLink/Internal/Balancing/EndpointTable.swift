internal import LongLinkTransport
internal import LongLinkWire

/// What the client knows of each endpoint (its round-trip estimate, its last reported load, its
/// failures and ban) and the choices made from it: the cost, the ranking for the connect race, and
/// whether every endpoint has failed.
///
/// A plain value: the supervisor feeds it probe results and link outcomes and asks it for the next
/// ranking; time is passed in, so that tests use a manual clock.
struct EndpointTable: Sendable {
    struct Health: Sendable {
        var roundTrip: PeakEWMA
        var load: (permille: Int, at: ContinuousClock.Instant)?
        var consecutiveFailures = 0
        var bannedUntil: ContinuousClock.Instant?
    }

    let policy: Balancing
    /// The endpoints in the order the app gave them.
    private(set) var endpoints: [Endpoint] = []
    private var health: [Endpoint: Health] = [:]

    init(policy: Balancing, endpoints: [Endpoint] = []) {
        self.policy = policy
        replace(endpoints)
    }

    /// A new list (from the provider): what is known of endpoints that stay is kept.
    mutating func replace(_ list: [Endpoint]) {
        var seen = Set<Endpoint>()
        endpoints = list.filter { seen.insert($0).inserted }
        health = health.filter { seen.contains($0.key) }
        for endpoint in endpoints where health[endpoint] == nil {
            health[endpoint] = Health(roundTrip: PeakEWMA(decay: policy.rttDecay))
        }
    }

    subscript(endpoint: Endpoint) -> Health? { health[endpoint] }

    // MARK: Outcomes

    mutating func recordRoundTrip(_ endpoint: Endpoint, _ sample: Duration, at now: ContinuousClock.Instant) {
        health[endpoint]?.roundTrip.add(sample, at: now)
    }

    mutating func recordLoad(_ endpoint: Endpoint, permille: Int, at now: ContinuousClock.Instant) {
        health[endpoint]?.load = (min(1000, max(0, permille)), now)
    }

    /// The endpoint answered (a probe completed, or a link logged in): its failures are forgiven.
    mutating func recordSuccess(_ endpoint: Endpoint) {
        health[endpoint]?.consecutiveFailures = 0
        health[endpoint]?.bannedUntil = nil
    }

    /// Connecting, the handshake or a probe failed. After ``Balancing/banAfterFailures`` in a row
    /// the endpoint is banned, for a period that doubles with every further failure.
    mutating func recordFailure(_ endpoint: Endpoint, at now: ContinuousClock.Instant) {
        guard var entry = health[endpoint] else { return }
        entry.consecutiveFailures += 1
        let beyond = entry.consecutiveFailures - policy.banAfterFailures
        if beyond >= 0 {
            let factor = Double(1 << min(beyond, 30))
            let length = min(policy.banMaximum.seconds, policy.banInitial.seconds * factor)
            entry.bannedUntil = now.advanced(by: .seconds(length))
        }
        health[endpoint] = entry
    }

    /// Keeps the endpoint out of the ranking until `until` without counting a failure (a server
    /// that said `GoAway` to move its clients elsewhere).
    mutating func setAside(_ endpoint: Endpoint, until: ContinuousClock.Instant) {
        guard let current = health[endpoint] else { return }
        health[endpoint]?.bannedUntil = max(current.bannedUntil ?? until, until)
    }

    // MARK: Decisions

    func isBanned(_ endpoint: Endpoint, at now: ContinuousClock.Instant) -> Bool {
        guard let until = health[endpoint]?.bannedUntil else { return false }
        return now < until
    }

    /// The load (0 to 1) the cost counts: the last report, unless it is stale.
    func load(_ endpoint: Endpoint, at now: ContinuousClock.Instant) -> Double {
        guard let report = health[endpoint]?.load, now - report.at < policy.loadStaleAfter else { return 0 }
        return Double(report.permille) / 1000
    }

    /// ``Balancing/cost(roundTrip:load:)`` of the endpoint. One never measured counts the probe
    /// timeout as its round trip, so that any endpoint that answered is preferred to it.
    func cost(_ endpoint: Endpoint, at now: ContinuousClock.Instant) -> Double {
        let estimate = health[endpoint]?.roundTrip.estimate ?? policy.probeTimeout.seconds
        return Balancing.cost(roundTrip: .seconds(estimate), load: load(endpoint, at: now))
    }

    /// The order in which to try the endpoints: the chosen one first, then the others by cost.
    ///
    /// The chosen one is the better of two random picks among the endpoints whose cost is within
    /// ``Balancing/tolerance`` of the best one's. Banned endpoints are left out; when all are
    /// banned, the one whose ban ends first is tried alone.
    func ranking(at now: ContinuousClock.Instant, using random: inout some RandomNumberGenerator) -> [Endpoint] {
        let open = endpoints.filter { !isBanned($0, at: now) }
        guard !open.isEmpty else {
            let soonest = endpoints.min { (health[$0]?.bannedUntil ?? now) < (health[$1]?.bannedUntil ?? now) }
            return soonest.map { [$0] } ?? []
        }
        // Sorted by cost, ties kept in the app's order.
        let ordered = open.enumerated()
            .map { (endpoint: $0.element, index: $0.offset, cost: cost($0.element, at: now)) }
            .sorted { $0.cost != $1.cost ? $0.cost < $1.cost : $0.index < $1.index }
        let best = ordered[0].cost
        let band = ordered.prefix { $0.cost <= best * policy.tolerance }
        var chosen = band[0]
        if band.count > 1 {
            let first = Int.random(in: 0..<band.count, using: &random)
            var second = Int.random(in: 0..<(band.count - 1), using: &random)
            if second >= first { second += 1 }
            let a = band[first]
            let b = band[second]
            chosen = (b.cost < a.cost || (b.cost == a.cost && b.index < a.index)) ? b : a
        }
        return [chosen.endpoint] + ordered.map(\.endpoint).filter { $0 != chosen.endpoint }
    }

    /// True when no endpoint is worth trying now: each has failed since it last answered, or is
    /// banned. The provider is then asked for a new list.
    func allFailed(at now: ContinuousClock.Instant) -> Bool {
        !endpoints.isEmpty
            && endpoints.allSatisfy { isBanned($0, at: now) || (health[$0]?.consecutiveFailures ?? 0) > 0 }
    }
}
