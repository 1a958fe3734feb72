/// What the app's lifecycle and network events do to the supervisor: end its wait before a
/// reconnection (or keep the wake for its next wait), end its wait on the link to re-probe, and
/// probe the link's liveness.
extension ClientStateMachine {
    /// Wakes the supervisor's wait before reconnecting with `wake` when it waits (`retryWaiting`),
    /// else keeps the wake for its next wait (a timer's wake concerns only the wait it was for).
    mutating func wakeRetry(_ wake: RetryWake, retryWaiting: Bool) -> [Action] {
        if retryWaiting { return [.wakeRetry(wake)] }
        if wake != .timer { supervision.pendingWake = wake }
        return []
    }

    /// The network changed: the supervisor reconnects now if it waits to, asks the provider again
    /// and re-probes if connected, and the link's liveness is probed.
    mutating func networkChanged(retryWaiting: Bool) -> [Action] {
        supervision.changes.network += 1
        var actions = wakeRetry(.networkChanged, retryWaiting: retryWaiting)
        if let latest = links.latest { actions.append(.wakeSupervisor(latest, .reprobe)) }
        return actions + [.probeLiveness]
    }

    /// The app went to the background or came back: back in the foreground, a reconnection waits
    /// no longer and the link's liveness is probed. Nothing when it was there already.
    mutating func setBackground(_ background: Bool, retryWaiting: Bool) -> [Action] {
        guard supervision.inBackground != background else { return [] }
        supervision.inBackground = background
        guard !background else { return [] }
        return wakeRetry(.networkChanged, retryWaiting: retryWaiting) + [.probeLiveness]
    }

    /// The endpoint list changed at run time: the supervisor looks at it now, on the link it waits
    /// on (`liveLink`, the current link when it has not ended) or before its next reconnection.
    mutating func endpointsChanged(liveLink: UInt64?, retryWaiting: Bool) -> [Action] {
        supervision.changes.list += 1
        if let liveLink { return [.wakeSupervisor(liveLink, .reprobe)] }
        return wakeRetry(.networkChanged, retryWaiting: retryWaiting)
    }
}
