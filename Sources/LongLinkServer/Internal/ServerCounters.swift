import Synchronization

/// The server's counters, updated from many event loops without a lock.
final class ServerCounters: Sendable {
    let openConnections = Atomic<Int>(0)
    let acceptedConnections = Atomic<Int>(0)
    let rejectedConnections = Atomic<Int>(0)
    let protocolViolations = Atomic<Int>(0)
    let idleClosures = Atomic<Int>(0)
    let readPauses = Atomic<Int>(0)
    let requestsReceived = Atomic<Int>(0)
    let handlersStarted = Atomic<Int>(0)
    let handlersRunning = Atomic<Int>(0)
    let requestsReplayed = Atomic<Int>(0)
    let requestsJoined = Atomic<Int>(0)
    let responsesSent = Atomic<Int>(0)
    let requestsRejected = Atomic<Int>(0)
    let requestsCancelled = Atomic<Int>(0)
    let requestsTimedOut = Atomic<Int>(0)
    let reliablePushesStored = Atomic<Int>(0)
    let reliablePushesSent = Atomic<Int>(0)
    let bestEffortPushesSent = Atomic<Int>(0)
    let bestEffortPushesDropped = Atomic<Int>(0)
    let acksReceived = Atomic<Int>(0)
    let pushWindowsReopened = Atomic<Int>(0)
    let orphanedExecutions = Atomic<Int>(0)
    let orphansRefused = Atomic<Int>(0)
    let tlsHandshakeFailures = Atomic<Int>(0)
    let tlsHandshakesPending = Atomic<Int>(0)
    let sharedStoreFailures = Atomic<Int>(0)
    let storeCallsRetried = Atomic<Int>(0)
    let sessionsReplaced = Atomic<Int>(0)
    let outcomesUnknown = Atomic<Int>(0)
    let claimsLost = Atomic<Int>(0)
    let credentialExpiries = Atomic<Int>(0)

    var snapshot: ServerStatistics {
        var s = ServerStatistics()
        s.openConnections = openConnections.load(ordering: .relaxed)
        s.acceptedConnections = acceptedConnections.load(ordering: .relaxed)
        s.rejectedConnections = rejectedConnections.load(ordering: .relaxed)
        s.protocolViolations = protocolViolations.load(ordering: .relaxed)
        s.idleClosures = idleClosures.load(ordering: .relaxed)
        s.readPauses = readPauses.load(ordering: .relaxed)
        s.requestsReceived = requestsReceived.load(ordering: .relaxed)
        s.handlersStarted = handlersStarted.load(ordering: .relaxed)
        s.handlersRunning = handlersRunning.load(ordering: .relaxed)
        s.requestsReplayed = requestsReplayed.load(ordering: .relaxed)
        s.requestsJoined = requestsJoined.load(ordering: .relaxed)
        s.responsesSent = responsesSent.load(ordering: .relaxed)
        s.requestsRejected = requestsRejected.load(ordering: .relaxed)
        s.requestsCancelled = requestsCancelled.load(ordering: .relaxed)
        s.requestsTimedOut = requestsTimedOut.load(ordering: .relaxed)
        s.reliablePushesStored = reliablePushesStored.load(ordering: .relaxed)
        s.reliablePushesSent = reliablePushesSent.load(ordering: .relaxed)
        s.bestEffortPushesSent = bestEffortPushesSent.load(ordering: .relaxed)
        s.bestEffortPushesDropped = bestEffortPushesDropped.load(ordering: .relaxed)
        s.acksReceived = acksReceived.load(ordering: .relaxed)
        s.tlsHandshakeFailures = tlsHandshakeFailures.load(ordering: .relaxed)
        s.tlsHandshakesPending = tlsHandshakesPending.load(ordering: .relaxed)
        s.pushWindowsReopened = pushWindowsReopened.load(ordering: .relaxed)
        s.credentialExpiries = credentialExpiries.load(ordering: .relaxed)
        s.orphanedExecutions = orphanedExecutions.load(ordering: .relaxed)
        s.orphansRefused = orphansRefused.load(ordering: .relaxed)
        s.sharedStoreFailures = sharedStoreFailures.load(ordering: .relaxed)
        s.storeCallsRetried = storeCallsRetried.load(ordering: .relaxed)
        s.sessionsReplaced = sessionsReplaced.load(ordering: .relaxed)
        s.outcomesUnknown = outcomesUnknown.load(ordering: .relaxed)
        s.claimsLost = claimsLost.load(ordering: .relaxed)
        return s
    }
}

extension Atomic where Value == Int {
    /// Adds one, relaxed: counters need no ordering with other memory.
    func increment(by amount: Int = 1) {
        _ = add(amount, ordering: .relaxed)
    }
}
