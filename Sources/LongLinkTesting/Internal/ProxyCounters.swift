import Synchronization

/// The counters of a whole ``FaultProxy``.
final class ProxyCounters: Sendable {
    let traffic = TrafficCounters()
    let accepted = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let upstreamConnectFailures = Atomic<Int>(0)
}
