/// The busy share of the server's event loops over the last window: a plain value fed the loops'
/// cumulative busy times, so that it is tested without loops.
///
/// Reading the load happens for every `Welcome` and `Pong`; the share is recomputed at most once a
/// window and is the busiest loop's (the connections on that loop are the ones that wait).
struct LoadGauge: Sendable {
    let window: Duration
    private var sampledAt: ContinuousClock.Instant?
    private var busy: [Duration] = []
    private(set) var share: Double = 0

    init(window: Duration = .seconds(1)) {
        self.window = window
    }

    /// The busy share (0 to 1) given each loop's cumulative busy time at `now`.
    mutating func sample(busy current: [Duration], at now: ContinuousClock.Instant) -> Double {
        guard let sampledAt, busy.count == current.count else {
            self.sampledAt = now
            busy = current
            return share
        }
        let elapsed = now - sampledAt
        guard elapsed >= window else { return share }
        var busiest = Duration.zero
        for (before, after) in zip(busy, current) { busiest = max(busiest, after - before) }
        share = min(1, max(0, busiest / elapsed))
        self.sampledAt = now
        busy = current
        return share
    }
}
