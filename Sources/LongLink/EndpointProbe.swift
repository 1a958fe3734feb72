/// What probing one endpoint found: whether it answered, its round trips and the load it reported
/// (see ``LongLinkClient/probe(_:configuration:)``).
public struct EndpointProbe: Sendable {
    /// What happened to the probe.
    public enum State: String, Sendable, Hashable {
        /// `Welcome` came, and the pings were answered.
        case reachable
        /// Nothing listens there (or the accept queue is full).
        case refused
        /// No answer within ``Balancing/probeTimeout``.
        case timedOut
        /// Another failure: unreachable, a name that does not resolve, a `GoAway`, a protocol error.
        case failed
        /// Not probed: the endpoint failed too often lately and is banned for a while.
        case banned
    }

    /// The endpoint probed.
    public var endpoint: Endpoint
    /// What happened.
    public var state: State
    /// The round trips of the probe's pings, in the order measured.
    public var roundTrips: [Duration]
    /// The last load the server reported (0 to 1000), if it answered.
    public var loadPermille: Int?
    /// The server's identity from its `Welcome`, if it answered.
    public var serverID: String?
    /// The cost the client gives the endpoint now (``Balancing/cost(roundTrip:load:)`` over its
    /// round-trip estimate), if it answered.
    public var cost: Double?
    /// Why the probe failed, when it did.
    public var error: LongLinkError?
    /// `Pong`s that answered none of the probe's pings (their nonces are random): ignored, and
    /// counted here. More than 0 means a broken server, or one answering pings it has not seen yet
    /// to look closer than it is.
    public var unmatchedPongs = 0

    /// Creates a probe result.
    public init(
        endpoint: Endpoint, state: State, roundTrips: [Duration] = [], loadPermille: Int? = nil,
        serverID: String? = nil, cost: Double? = nil, error: LongLinkError? = nil
    ) {
        self.endpoint = endpoint
        self.state = state
        self.roundTrips = roundTrips
        self.loadPermille = loadPermille
        self.serverID = serverID
        self.cost = cost
        self.error = error
    }

    /// The shortest round trip measured.
    public var minimumRoundTrip: Duration? { roundTrips.min() }

    /// The median round trip measured (the lower middle one of an even count).
    public var medianRoundTrip: Duration? {
        guard !roundTrips.isEmpty else { return nil }
        return roundTrips.sorted()[(roundTrips.count - 1) / 2]
    }
}

/// The outcome of probing several endpoints at once.
public struct ProbeReport: Sendable {
    /// One result per endpoint, in the order given.
    public var probes: [EndpointProbe]
    /// The endpoint the client would connect to first, if any answered.
    public var chosen: Endpoint?

    /// Creates a report.
    public init(probes: [EndpointProbe], chosen: Endpoint?) {
        self.probes = probes
        self.chosen = chosen
    }
}
