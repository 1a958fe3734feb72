import Foundation

extension HeartbeatLearner {
    /// How restoring from a ``HeartbeatStore`` went: the client logs it.
    enum RestoreOutcome: Sendable, Equatable {
        /// Nothing was stored.
        case empty
        /// This many networks were restored.
        case restored(Int)
        /// What was stored could not be used; learning starts afresh.
        case ignored(HeartbeatStoreError)
    }

    /// What was learned, most recently used network first, with wall-clock times.
    func snapshot(now: Instant, wallNow: Date) -> HeartbeatSnapshot {
        let networks = records.sorted { $0.value.lastUsed > $1.value.lastUsed }.map { key, record in
            HeartbeatSnapshot.Network(
                key: key, intervalMilliseconds: record.interval.milliseconds,
                survivedMilliseconds: record.survived.milliseconds,
                stableSince: record.stableSince.map { wallNow.addingTimeInterval(-(now - $0).seconds) })
        }
        return HeartbeatSnapshot(networks: networks)
    }

    /// A learner that starts from what `store` kept; anything unusable is ignored, never fatal.
    static func restoring(
        _ parameters: AdaptiveHeartbeat, from store: any HeartbeatStore, now: Instant, wallNow: Date
    ) -> (HeartbeatLearner, RestoreOutcome) {
        var learner = HeartbeatLearner(parameters: parameters)
        let snapshot: HeartbeatSnapshot?
        do {
            snapshot = try store.load()
        } catch let error as HeartbeatStoreError {
            return (learner, .ignored(error))
        } catch {
            return (learner, .ignored(HeartbeatStoreError(.unavailable, "\(error)")))
        }
        guard let snapshot else { return (learner, .empty) }
        guard snapshot.version == 1 else {
            return (learner, .ignored(HeartbeatStoreError(.corrupt, "snapshot version \(snapshot.version)")))
        }
        // Oldest first, so that the most recently used end up most recent; at most maxNetworks.
        for network in snapshot.networks.prefix(parameters.maxNetworks).reversed() {
            learner.restore(network.key, learner.record(from: network, now: now, wallNow: wallNow))
        }
        return (learner, .restored(learner.records.count))
    }

    /// A stored entry as a record, its values brought within the parameters (they may have changed
    /// since it was saved) and its wall-clock time as an instant (a time in the future reads as now).
    private func record(from network: HeartbeatSnapshot.Network, now: Instant, wallNow: Date) -> Record {
        let bound = { (milliseconds: Int64) in
            min(max(Duration.milliseconds(milliseconds), parameters.start), parameters.maximum)
        }
        let interval = bound(network.intervalMilliseconds)
        let survived = min(bound(network.survivedMilliseconds), interval)
        let stableSince = network.stableSince.map { date in
            now.advanced(by: .zero - .seconds(max(0, min(wallNow.timeIntervalSince(date), 315_360_000.0))))
        }
        return Record(interval: interval, survived: survived, stableSince: stableSince)
    }
}

extension Duration {
    /// Whole milliseconds, truncated.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000 + attoseconds / 1_000_000_000_000_000
    }
}
