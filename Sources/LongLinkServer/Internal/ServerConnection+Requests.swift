internal import LongLinkTransport
internal import LongLinkWire

/// Requests: admission (by the session), de-duplication, handlers, deadlines, cancellation and
/// answers.
extension ServerConnection {
    /// What a request whose deadline passed on the server is answered.
    static let timedOutStatus = Frame.Status(
        code: .deadlineExceeded, message: "the request's deadline passed on the server")

    /// What a copy calling another method under a request id the window holds is answered.
    static let methodConflictStatus = Frame.Status(
        code: .invalidArgument, message: "request_id was used for another method; ids are never reused")

    func handleRequest(_ request: Frame.Request) {
        core.counters.requestsReceived.increment()
        let route = core.router.route(for: request.method)
        // The session admits the request before its payload is inflated: a refused one costs no
        // inflating.
        switch session.receivedRequest(request, hasHandler: route != nil) {
        case .dispatch(let token):
            // The session dispatches only requests whose method has a route.
            dispatch(request, route: route!, token: token)
        case .inflateAndDispatch(let token, let limit):
            guard let inflated = inflatedRequest(request, within: limit) else { return }
            dispatch(inflated, route: route!, token: token)
            session.holdInflated(inflated.payload.count, requestID: request.requestID, token: token)
        case .reject(let status):
            sendResponse(Frame.Response(status: status), to: request.requestID)
        case .rejectOverLimit(let status):
            core.counters.requestsRejected.increment()
            sendResponse(Frame.Response(status: status), to: request.requestID)
        case .ignoreCopyInFlight:
            core.counters.requestsJoined.increment()
        case .closeConnection(let close):
            perform(close)
        case .ignore:
            break
        }
    }

    /// Runs an admitted request, unless the de-duplication window has it already: then the request
    /// waits for that execution (it stays in flight without one of its own) or gets its stored reply.
    ///
    /// Only requests of a connection bound to a principal are de-duplicated: before a login a
    /// client is anyone, so its requests never enter the window (an anonymous flood cannot fill
    /// it, and a reply made before a login, a login's token, is never replayed to another
    /// connection that presents the same ids).
    private func dispatch(_ request: Frame.Request, route: Router.Route, token: UInt64) {
        // One clock read per request: its deadline and its place in the de-duplication window.
        let now = ContinuousClock.now
        guard core.dedupeEnabled, dedupeClient.principal != nil else {
            execute(request, route: route, token: token, run: nil, key: nil, at: now)
            return
        }
        let key = DedupeKey(client: dedupeClient, requestID: request.requestID)
        let waiter = DedupeWaiter(connection: self, requestID: request.requestID, token: token)
        let time = core.dedupeTime(now)
        let method = request.method
        switch core.dedupe.withLock({ $0.window.arrive(key, method: method, waiter: waiter, at: time) }) {
        case .execute(let run):
            execute(request, route: route, token: token, run: run, key: key, at: now)
        case .wait:
            core.counters.requestsJoined.increment()
            // The copy keeps its own deadline: the execution it joined may have a later one, or none.
            var execution = Execution(task: nil, timer: nil, run: nil, dedupeKey: key)
            if request.timeoutMilliseconds > 0 {
                let requestID = request.requestID
                execution.timer = loop.scheduleTimer(after: .milliseconds(Int64(request.timeoutMilliseconds))) {
                    [self] in
                    handlerTimedOut(requestID: requestID, token: token, run: nil)
                }
            }
            session.track(requestID: request.requestID, token: token, execution: execution)
        case .replay(let response, let binding):
            core.counters.requestsReplayed.increment()
            if let binding { repeatBinding(binding) }
            sendResponse(response, to: request.requestID)
        case .conflict:
            sendResponse(Frame.Response(status: Self.methodConflictStatus), to: request.requestID)
        case .refuse(let status):
            sendResponse(Frame.Response(status: status), to: request.requestID)
        }
    }

    /// The execution `run` bound this connection (from its handler, any thread): its copies on
    /// other connections, joined or replayed, bind theirs alike.
    func executionBound(_ run: DedupeRun, principal: String, exclusive: Bool) {
        core.dedupe.withLock { table in
            // Keeping an expiry the handler set before it bound.
            var binding = table.window.binding(of: run) ?? StoredReply.Binding()
            binding.principal = principal
            binding.exclusive = exclusive
            table.window.bound(run, to: binding)
        }
    }

    /// The execution `run` set the session's credential to expire at `expiry` (from its handler, any
    /// thread): its copies, joined or replayed, set theirs to the same instant.
    func executionSetCredentialExpiry(_ run: DedupeRun, _ expiry: ContinuousClock.Instant) {
        core.dedupe.withLock { table in
            var binding = table.window.binding(of: run) ?? StoredReply.Binding()
            binding.credentialExpiry = expiry
            table.window.bound(run, to: binding)
        }
    }

    /// Does to this connection what the execution a copy was answered from did to its own: the
    /// principal it bound, the credential expiry it set.
    private func repeatBinding(_ binding: StoredReply.Binding) {
        if let principal = binding.principal { bind(principal: principal, exclusive: binding.exclusive) }
        if let expiry = binding.credentialExpiry { setCredentialExpiry(expiry) }
    }

    private func execute(
        _ request: Frame.Request, route: Router.Route, token: UInt64, run: DedupeRun?, key: DedupeKey?,
        at now: ContinuousClock.Instant
    ) {
        let timeout: Duration? =
            request.timeoutMilliseconds > 0 ? .milliseconds(Int64(request.timeoutMilliseconds)) : nil
        let context = RequestContext(
            requestID: request.requestID, method: request.method, metadata: request.metadata,
            clientID: session.clientID, principal: session.principal,
            deadline: timeout.map { now.advanced(by: $0) }, connectionID: connection.id, session: self, run: run)
        let requestID = request.requestID
        let payload = request.payload
        if let shared = core.sharedDedupe, let run, let key {
            executeShared(
                shared, route: route, payload: payload, context: context, token: token, run: run, key: key,
                resent: request.resent, timeout: timeout, at: now)
            return
        }
        let core = self.core
        core.counters.handlersStarted.increment()
        switch route {
        case .synchronous(let handler):
            // Inline, on the loop: no task, no timer and no entry in the session's table (no other
            // frame of this connection is handled before it returns), and not counted as running
            // (it is over before anyone could read the counter).
            session.startedInline()
            let limit = configuration.maxOutgoingFrameBytes
            let response = Self.response(requestID: requestID, limit: limit) { try handler(payload, context) }
            finishedInline(requestID: requestID, token: token, run: run, response: response)
        case .async(let handler):
            let limit = configuration.maxOutgoingFrameBytes
            core.counters.handlersRunning.increment()
            let executor: (any TaskExecutor)? = configuration.runsHandlersOnEventLoop ? loop : nil
            let task = Task(executorPreference: executor) { [self] in
                let response: Frame.Response?
                do {
                    let reply = try await handler(payload, context)
                    response = Self.fitted(Frame.Response(requestID: requestID, payload: reply), limit: limit)
                } catch {
                    response = Self.response(requestID: requestID, limit: limit) { throw error }
                }
                core.counters.handlersRunning.increment(by: -1)
                core.executionFinished(
                    origin: self, requestID: requestID, token: token, run: run, response: response)
            }
            var execution = Execution(task: task, timer: nil, run: run, dedupeKey: key)
            if let timeout {
                execution.timer = loop.scheduleTimer(after: timeout) { [self] in
                    handlerTimedOut(requestID: requestID, token: token, run: run)
                }
            }
            // The task cannot answer before this: its answer reaches the session on this loop,
            // after the current frame.
            session.track(requestID: requestID, token: token, execution: execution)
        }
    }

    /// A handler that ran inline returned: answers its request here and, through the
    /// de-duplication window, every copy that joined it from another connection meanwhile.
    private func finishedInline(requestID: String, token: UInt64, run: DedupeRun?, response: Frame.Response?) {
        var reply = response
        if let run {
            let settled = core.settle(run, response: response, at: core.dedupeTime(.now))
            reply = settled.reply
            core.deliver(settled.reply, binding: settled.binding, to: settled.waiters, except: (self, token))
        }
        switch session.finishedInline() {
        case .sendResponse:
            if let reply { sendResponse(reply, to: requestID) }
        case .sendResponseAndClose(let close):
            if let reply { sendResponse(reply, to: requestID) }
            perform(close)
        case .ignore:
            break
        }
    }

    /// The response for a handler's outcome: its reply, its `LongLinkError` as a status, `nil` for a
    /// cancellation (no response is sent), or `INTERNAL` for any other error (whose text is not sent).
    static func response(requestID: String, limit: Int, _ body: () throws -> [UInt8]) -> Frame.Response? {
        do {
            return fitted(Frame.Response(requestID: requestID, payload: try body()), limit: limit)
        } catch let error as LongLinkError {
            return Frame.Response(
                requestID: requestID, status: Frame.Status(code: error.code.status, message: error.message))
        } catch is CancellationError {
            return nil
        } catch {
            return Frame.Response(
                requestID: requestID, status: Frame.Status(code: .internalError, message: "the handler failed"))
        }
    }

    /// `response`, or `RESOURCE_EXHAUSTED` in its place when its frame is larger than clients read
    /// (``ServerConfiguration/maxOutgoingFrameBytes``): sent, it would make the client drop the link,
    /// resend, and get it again (a stored reply would be replayed the same way).
    static func fitted(_ response: Frame.Response, limit: Int) -> Frame.Response {
        let size = Frame.response(response).encodedSize
        guard size > limit else { return response }
        return Frame.Response(
            requestID: response.requestID,
            status: Frame.Status(
                code: .resourceExhausted,
                message: "reply too large: a \(size)-byte frame, clients read at most \(limit)"))
    }

    /// The deadline of a request passed: `run` is its execution when this connection ran it, nil
    /// for a copy that joined an execution elsewhere.
    func handlerTimedOut(requestID: String, token: UInt64, run: DedupeRun?) {
        let request: Session.InFlightRequest
        let close: Session.Close?
        switch session.handlerTimedOut(requestID: requestID, token: token) {
        case .failTimedOut(let timedOut): (request, close) = (timedOut, nil)
        case .failTimedOutAndClose(let timedOut, let drained): (request, close) = (timedOut, drained)
        case .ignore:
            // The session let go of the request when it closed; the execution may run on as an
            // orphan, which its deadline still ends.
            if let run { core.orphanTimedOut(run, status: Self.timedOutStatus) }
            return
        }
        core.counters.requestsTimedOut.increment()
        request.execution?.task?.cancel()
        let timedOut = Frame.Response(status: Self.timedOutStatus)
        sendResponse(timedOut, to: requestID)
        if let run = request.execution?.run {
            // Timed-out executions are not stored (a later copy runs again); the copies waiting for
            // this one on other connections time out with it.
            let waiters = core.dedupe.withLock { $0.abandon(run) }.waiters
            core.deliver(timedOut, to: waiters, except: (self, token))
        } else {
            // A joined copy gives up alone: the execution goes on for the others.
            stopWaiting(for: request)
        }
        if let close { perform(close) }
    }

    func handleCancel(_ requestID: String) {
        switch session.receivedCancel(requestID: requestID) {
        case .cancelRequest(let request):
            cancel(request)
        case .cancelRequestAndClose(let request, let close):
            cancel(request)
            perform(close)
        case .closeConnection(let close):
            perform(close)
        case .ignore:
            break
        }
    }

    private func cancel(_ request: Session.InFlightRequest) {
        core.counters.requestsCancelled.increment()
        if let timer = request.execution?.timer { loop.cancelTimer(timer) }
        // With de-duplication, the handler stops only when no other copy of the request waits for it.
        if stopWaiting(for: request) {
            request.execution?.task?.cancel()
        }
    }

    /// Takes this connection's copy of `request` off the de-duplication window's waiters. Returns
    /// true when no copy waits for the execution any more (always for a request that was not
    /// de-duplicated).
    @discardableResult
    func stopWaiting(for request: Session.InFlightRequest) -> Bool {
        // Under the key it was admitted with: the connection may have been bound to a principal since.
        guard let key = request.execution?.dedupeKey else { return true }
        return core.dedupe.withLock {
            $0.window.removeWaiter(key) { $0.connection === self && $0.token == request.token }
        }
    }

    /// Answers a request this connection has in flight (any thread). `response` is nil when its
    /// handler ended without an answer (it threw `CancellationError`): the request stops being in
    /// flight and nothing is sent. `binding`: what the execution this copy joined bound its own
    /// connection to; this one is bound alike before the answer goes out.
    func deliver(requestID: String, token: UInt64, response: Frame.Response?, binding: StoredReply.Binding? = nil) {
        onLoop { [self] in answer(requestID: requestID, token: token, response: response, binding: binding) }
    }

    private func answer(requestID: String, token: UInt64, response: Frame.Response?, binding: StoredReply.Binding?) {
        let request: Session.InFlightRequest
        let close: Session.Close?
        switch session.handlerFinished(requestID: requestID, token: token) {
        case .sendResponse(let answered): (request, close) = (answered, nil)
        case .sendResponseAndClose(let answered, let drained): (request, close) = (answered, drained)
        case .ignore: return
        }
        if let timer = request.execution?.timer { loop.cancelTimer(timer) }
        if let binding { repeatBinding(binding) }
        if let response { sendResponse(response, to: requestID) }
        if let close { perform(close) }
    }

    /// Sends `response` under `requestID` (a stored or shared reply carries another id or none).
    func sendResponse(_ response: Frame.Response, to requestID: String) {
        var response = response
        response.requestID = requestID
        if compresses, response.status == nil || response.status?.code == .ok {
            (response.payload, response.compression) = configuration.compression.outgoing(response.payload)
        }
        send(.response(response))
        core.counters.responsesSent.increment()
    }
}
