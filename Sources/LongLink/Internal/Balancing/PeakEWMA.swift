import Foundation
internal import LongLinkWire

/// A round-trip estimate that takes a worse sample at once and forgets it slowly (Finagle's "peak
/// EWMA"): one slow probe makes an endpoint look slow right away, and it takes several good ones
/// over the decay time to look fast again.
struct PeakEWMA: Sendable, Hashable {
    /// The time constant of the decay, in seconds.
    let decay: Double
    /// The estimate in seconds; nil before the first sample.
    private(set) var estimate: Double?
    private var updatedAt: ContinuousClock.Instant?

    init(decay: Duration) {
        self.decay = max(1e-9, decay.seconds)
    }

    /// Adds a sample taken at `now`.
    mutating func add(_ sample: Duration, at now: ContinuousClock.Instant) {
        let value = max(0, sample.seconds)
        defer { updatedAt = now }
        guard let current = estimate, let updatedAt else {
            estimate = value
            return
        }
        if value >= current {
            estimate = value
            return
        }
        // The weight of the old estimate falls with the time since it was set.
        let elapsed = max(0, (now - updatedAt).seconds)
        let keep = exp(-elapsed / decay)
        estimate = current * keep + value * (1 - keep)
    }
}
