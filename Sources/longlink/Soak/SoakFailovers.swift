/// The soak's account of the requests caught by a Redis Cluster failover: those in flight at some
/// moment between the kill of a primary and its replica serving the slot, and how many of them
/// were answered OK (their store calls waited for the new primary within their deadline) or
/// failed.
///
/// A failover's end is known only once the kill returns (after the killed node is back), so the
/// requests that end while one is under way wait here until then (a failover's worth: a few
/// seconds of requests); the rest are counted as they end.
struct SoakFailovers: Sendable {
    /// Requests in flight during a failover.
    private(set) var requests = 0
    /// Of those, answered OK.
    private(set) var answered = 0
    /// The failover under way: when its primary was killed.
    private var current: Duration?
    /// The requests that ended during the failover under way: when they started, and whether OK.
    private var ended: [(startedAt: Duration, ok: Bool)] = []
    /// The last failover over.
    private var last: (start: Duration, end: Duration)?

    /// Of the requests in flight during a failover, those that failed.
    var failed: Int { requests - answered }

    /// A primary was killed at `time`.
    mutating func started(at time: Duration) {
        current = time
    }

    /// The failover that started last ended at `time` (its replica served the slot).
    mutating func ended(at time: Duration) {
        guard let start = current else { return }
        for request in ended where request.startedAt <= time { count(ok: request.ok) }
        ended = []
        current = nil
        last = (start, time)
    }

    /// A request that started at `startedAt` ended at `time`, answered OK or not.
    mutating func requestEnded(startedAt: Duration, at time: Duration, ok: Bool) {
        if let current, time >= current {
            ended.append((startedAt, ok))
        } else if let last, time >= last.start, startedAt <= last.end {
            count(ok: ok)
        }
    }

    private mutating func count(ok: Bool) {
        requests += 1
        if ok { answered += 1 }
    }
}
