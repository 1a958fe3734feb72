import Synchronization

/// Byte and fault counters of a proxy or of one link, updated from event-loop threads.
final class TrafficCounters: Sendable {
    let forwardedUpstream = Atomic<Int>(0)
    let forwardedDownstream = Atomic<Int>(0)
    let discardedUpstream = Atomic<Int>(0)
    let discardedDownstream = Atomic<Int>(0)
    let faultsApplied = Atomic<Int>(0)
    let natMappingsForgotten = Atomic<Int>(0)

    func forwarded(_ count: Int, upstream: Bool) {
        if upstream {
            forwardedUpstream.add(count, ordering: .relaxed)
        } else {
            forwardedDownstream.add(count, ordering: .relaxed)
        }
    }

    func discarded(_ count: Int, upstream: Bool) {
        if upstream {
            discardedUpstream.add(count, ordering: .relaxed)
        } else {
            discardedDownstream.add(count, ordering: .relaxed)
        }
    }
}
