internal import LongLinkTransport
internal import LongLinkWire

/// A fleet: requests settled with the shared de-duplication window.
extension ServerConnection {
    /// Runs a request admitted by the local window under the shared window's rule: the handler
    /// runs only when the shared store gives this server the claim; otherwise the request waits
    /// for the server that has it and gets its stored reply. Always in a task (the shared window
    /// is a round trip away), with the request's deadline armed as for any handler.
    ///
    /// Only for requests of a connection bound to a principal: anonymous requests get no run and
    /// no key (see `dispatch` in `ServerConnection+Requests.swift`), so the shared window never holds a reply made
    /// before a login, nor places an entry by a client-chosen `client_id` alone.
    func executeShared(
        _ store: any DedupeStore, route: Router.Route, payload: [UInt8], context: RequestContext,
        token: UInt64, run: DedupeRun, key: DedupeKey, resent: Bool, timeout: Duration?,
        at now: ContinuousClock.Instant
    ) {
        assert(key.client.principal != nil, "anonymous requests are not de-duplicated")
        let runningFor = (timeout ?? configuration.dedupeWindow) + ServerCore.sharedClaimMargin
        let deadline = now.advanced(by: timeout ?? runningFor)
        let requestID = context.requestID
        let limit = configuration.maxOutgoingFrameBytes
        let core = self.core
        core.counters.handlersRunning.increment()
        let executor: (any TaskExecutor)? = configuration.runsHandlersOnEventLoop ? loop : nil
        let task = Task(executorPreference: executor) { [self] in
            let (response, kept) = await core.sharedOutcome(
                store, key: key, method: context.method, resent: resent, runningFor: runningFor, deadline: deadline
            ) { () async -> Frame.Response? in
                switch route {
                case .synchronous(let handler):
                    return Self.response(requestID: requestID, limit: limit) { try handler(payload, context) }
                case .async(let handler):
                    do {
                        let reply = try await handler(payload, context)
                        return Self.fitted(Frame.Response(requestID: requestID, payload: reply), limit: limit)
                    } catch {
                        return Self.response(requestID: requestID, limit: limit) { throw error }
                    }
                }
            }
            core.counters.handlersRunning.increment(by: -1)
            core.executionFinished(
                origin: self, requestID: requestID, token: token, run: run, response: response, kept: kept)
        }
        var execution = Execution(task: task, timer: nil, run: run, dedupeKey: key)
        if let timeout {
            execution.timer = loop.scheduleTimer(after: timeout) { [self] in
                handlerTimedOut(requestID: requestID, token: token, run: run)
            }
        }
        session.track(requestID: requestID, token: token, execution: execution)
    }
}
