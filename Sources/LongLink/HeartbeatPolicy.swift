/// How a client chooses its heartbeat interval (see ``ClientConfiguration/heartbeatPolicy``).
///
/// ``fixed`` (the default) proposes ``ClientConfiguration/heartbeat`` on every network, as before
/// this policy existed. ``adaptive(_:)`` learns, per network (``NetworkKey``), the longest interval
/// the network's NAT tolerates on an idle link, so that a phone's radio wakes as seldom as the
/// network allows: see ``AdaptiveHeartbeat`` for the parameters and ReconnectionAndLogin.md for the
/// algorithm.
public struct HeartbeatPolicy: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        case fixed
        case adaptive(AdaptiveHeartbeat)
    }

    let kind: Kind

    /// ``ClientConfiguration/heartbeat`` on every network: today's behaviour, and the default.
    public static let fixed = HeartbeatPolicy(kind: .fixed)

    /// An interval learned per network within `parameters`.
    public static func adaptive(_ parameters: AdaptiveHeartbeat = AdaptiveHeartbeat()) -> HeartbeatPolicy {
        HeartbeatPolicy(kind: .adaptive(parameters))
    }

    /// The adaptive parameters, or nil for ``fixed``.
    public var adaptive: AdaptiveHeartbeat? {
        if case .adaptive(let parameters) = kind { parameters } else { nil }
    }
}
