internal import LongLinkWire

/// A fleet's shared stores: observing the principals this server holds, and settling with the
/// shared de-duplication window which server runs a request.
extension ServerCore {
    /// How much longer than its deadline a request's claim in the shared window lasts: the
    /// running server answers within the deadline, and the claim must not expire before that.
    static let sharedClaimMargin = Duration.seconds(5)

    /// Starts the push store's notices: a push stored anywhere for a principal held here wakes
    /// that principal's connections; lost notices make every connection read its principal's
    /// pushes again from the first unacknowledged one (the store may also have lost its contents
    /// and numbered anew in a new epoch, from seq 1).
    func startObserving() async {
        sharedDedupe?.attach(serverID: configuration.serverID)
        await pushes.startObserving(
            PushStoreObserver(
                isWatching: { [weak self] principal in self?.holds(principal) ?? false },
                pushStored: { [weak self] principal in
                    for connection in self?.connections(of: principal) ?? [] { connection.requestPush() }
                },
                noticesLost: { [weak self] in
                    guard let self else { return }
                    for connection in allConnections() { connection.rereadPushes() }
                    // A session notice may have been among those lost.
                    Task { await self.checkSessionRecords(of: self.heldPrincipals()) }
                },
                sessionStarted: { [weak self] principal, clientID in
                    self?.endSessions(of: principal, exceptClient: clientID)
                }))
        startSessionChecks()
        presence?.startRenewals()
    }

    /// The principals held here changed for `principal` (its first connection came, or its last
    /// went): a push store a round trip away follows, in the background (one in this process asks
    /// ``holds(_:)`` as it reports, and loses no notice).
    func refreshObservation(of principal: String) {
        guard immediatePushes == nil else { return }
        Task {
            await pushes.refreshObservation(of: principal)
            // A session notice published before the subscription was confirmed is missed.
            if holds(principal) { await checkSessionRecords(of: [principal]) }
        }
    }

    /// A client logged in as `principal` with an exclusive binding: every session of the principal
    /// here from another client ends at once, and the push store tells every server observing it
    /// (the servers of a fleet) to do the same.
    func sessionStarted(principal: String, clientID: String) {
        endSessions(of: principal, exceptClient: clientID)
        let counters = self.counters
        Task {
            do throws(LongLinkError) {
                try await pushes.announceSession(SessionAnnouncement(principal: principal, clientID: clientID))
            } catch {
                counters.sharedStoreFailures.increment()
            }
        }
    }

    /// Ends, with `GoAway(UNAUTHENTICATED, reconnect: false)`, the sessions of `principal` held here
    /// by clients other than `clientID` (that client's own other links, a reconnection or a
    /// migration under way, are kept).
    func endSessions(of principal: String, exceptClient clientID: String) {
        for connection in connections(of: principal) {
            connection.endSession(of: principal, unlessClient: clientID)
        }
    }

    /// The claim of a request this server ran was no longer its own when the reply was to be
    /// stored: its lease lapsed (Redis out of reach, the server stalled) and a waiter answered the
    /// request `UNKNOWN`. The reply still goes to this caller; resends get `UNKNOWN`.
    private func claimLost(requestID: String) {
        counters.claimsLost.increment()
        configuration.logger?(
            "LongLinkServer \(configuration.serverID): the fleet claim of request \(requestID) was lost before its"
                + " reply was stored; its resends are answered UNKNOWN")
    }

    /// Stops the push store's reports and closes the shared stores' connections (the server owns
    /// them).
    func shutdownStores() async {
        await pushes.shutdown()
        await sharedDedupe?.shutdown()
    }

    /// What a request for `method` admitted under `key` comes to in a fleet: the shared window is
    /// asked first; `handler` runs only when this server claims the request. A stored reply of
    /// another method is not replayed: the copy is refused `INVALID_ARGUMENT`, as one server's
    /// window refuses it. Returns the response and whether
    /// the local window may keep it (a reply that says the shared window was unreachable is not
    /// kept: the request did not run). A nil response: cancelled, or its deadline came first.
    ///
    /// A store call that fails for a reason that passes (``StoreRetry/isTransient(_:)``: a failover,
    /// a connection being made again) is made again with backoff while the deadline allows; the
    /// request is answered `UNAVAILABLE`, not run, only when no attempt succeeded in time (see
    /// ``StoreRetry``). A claim whose reply was lost is recognized by the store when asked again
    /// (it returns ``DedupeClaim/run`` to its own instance once), so that nothing runs twice.
    func sharedOutcome(
        _ store: any DedupeStore, key: DedupeKey, method: String, resent: Bool, runningFor: Duration,
        deadline: ContinuousClock.Instant, handler: () async -> Frame.Response?
    ) async -> (response: Frame.Response?, kept: Bool) {
        let (principal, clientID, requestID) = (key.client.principal, key.clientID, key.requestID)
        let (retry, timing) = storeRetry.withLock { ($0.policy, $0.timing) }
        let counters = self.counters
        func retrying() { counters.storeCallsRetried.increment() }
        var claim: DedupeClaim
        do throws(StoreRetry.Failure) {
            claim = try await retry.call(until: deadline, timing: timing, retrying: retrying) {
                () async throws(LongLinkError) in
                try await store.begin(
                    DedupeClaimRequest(
                        principal: principal, clientID: clientID, requestID: requestID, runningFor: runningFor,
                        resent: resent, window: configuration.dedupeWindow))
            }
            if claim == .running {
                counters.requestsJoined.increment()
                claim = try await retry.call(until: deadline, timing: timing, retrying: retrying) {
                    () async throws(LongLinkError) in
                    try await store.awaitOutcome(
                        DedupeWaitRequest(
                            principal: principal, clientID: clientID, requestID: requestID, runningFor: runningFor,
                            until: deadline))
                }
            }
        } catch {
            return Self.storeFailed(error, counters: counters)
        }
        switch claim {
        case .running:
            return (nil, true)
        case .finished(let bytes):
            guard let stored = SharedReply.decode(bytes) else {
                let status = Frame.Status(code: .internalError, message: "the stored reply could not be read")
                return (Frame.Response(status: status), false)
            }
            if let storedMethod = stored.method, storedMethod != method {
                return (Frame.Response(status: ServerConnection.methodConflictStatus), false)
            }
            counters.requestsReplayed.increment()
            return (stored.response, true)
        case .run:
            counters.handlersStarted.increment()
            let response = await handler()
            if let response {
                storeReply(response, store, key: key, method: method)
            } else if !isShuttingDown {
                // Cancelled or timed out: a copy may run it again, as in one server's window. A
                // server going down leaves its claims to expire instead: it may have done part
                // of the work.
                do throws(LongLinkError) {
                    try await store.abandon(
                        DedupeAbandonRequest(principal: principal, clientID: clientID, requestID: requestID))
                } catch {
                    counters.sharedStoreFailures.increment()
                }
            }
            return (response, true)
        }
    }

    /// What a request whose shared-window call failed is answered, and whether the local window
    /// keeps it.
    private static func storeFailed(
        _ failure: StoreRetry.Failure, counters: ServerCounters
    ) -> (response: Frame.Response?, kept: Bool) {
        let error = failure.error
        switch error.code {
        case .outcomeUnknown:
            counters.outcomesUnknown.increment()
            var status = Frame.Status(code: .unknown, message: error.message)
            status.detail = Frame.Status.outcomeUnknownDetail
            // Kept: a copy that reaches this server again gets the same answer, as from the store.
            return (Frame.Response(status: status), true)
        case .resourceExhausted:
            // The tenant is over its budget in the shared window (see `DedupeRefusal`): refused,
            // not run, nothing kept; the message says when to retry.
            return (Frame.Response(status: Frame.Status(code: .resourceExhausted, message: error.message)), false)
        default:
            counters.sharedStoreFailures.increment()
            let message =
                failure.outlasted
                ? "the fleet's de-duplication window could not be reached before the request's deadline"
                    + " (\(failure.failures) attempts: \(error.message)); the request did not run"
                : "the fleet's de-duplication window could not be reached; the request did not run"
            let status = Frame.Status(
                code: error.code == .shutdown ? .unavailable : error.code.status, message: message)
            return (Frame.Response(status: status), false)
        }
    }

    /// Stores the reply of a request this server ran, in the background: the caller is answered at
    /// once, not a round trip later. Until it is stored, a copy on another server waits for it (the
    /// claim is still this server's, renewed with its lease); should this server stop in between,
    /// the lease ends and the copy is answered `UNKNOWN`, as for a crash while the handler ran.
    private func storeReply(
        _ response: Frame.Response, _ store: any DedupeStore, key: DedupeKey, method: String
    ) {
        let stored = SharedReply.encode(response, method: method)
        let window = configuration.dedupeWindow
        Task { [self] in
            do throws(LongLinkError) {
                let kept = try await store.finish(
                    DedupeFinishRequest(
                        principal: key.client.principal, clientID: key.clientID, requestID: key.requestID,
                        reply: stored, window: window))
                if !kept { claimLost(requestID: key.requestID) }
            } catch {
                counters.sharedStoreFailures.increment()
                configuration.logger?(
                    "LongLinkServer \(configuration.serverID): the reply of fleet request \(key.requestID) could not be"
                        + " stored (\(error.message)); it went to its caller, and copies wait for the claim's term to"
                        + " end")
            }
        }
    }
}
