import FuzzKit

@testable import LongLinkServer
@testable import LongLinkWire

extension ServerModel {
    /// Methods: "async" runs as a task (finished by a later event), "inline" returns at once, any
    /// other has no handler.
    mutating func received(_ request: Frame.Request) {
        let hasHandler = request.method == "async" || request.method == "inline"
        switch session.receivedRequest(request, hasHandler: hasHandler) {
        case .dispatch(let token): dispatch(request, token: token)
        case .inflateAndDispatch(let token, let limit):
            // The payload stands for itself inflated 64 times: past the limit it is refused.
            let inflated = request.payload.count * 64
            guard inflated <= limit.bytes else { break }
            dispatch(request, token: token)
            session.holdInflated(inflated, requestID: request.requestID, token: token)
            check(session.inflatedBytesHeld <= maxInflatedBytes, "inflated bytes held past the budget")
        case .reject, .rejectOverLimit, .ignoreCopyInFlight, .ignore: break
        case .closeConnection(let close): perform(close)
        }
    }

    private mutating func dispatch(_ request: Frame.Request, token: UInt64) {
        let key = DedupeKey(client: dedupeClient, requestID: request.requestID)
        switch window.arrive(key, method: request.method, waiter: waiter(token), at: now) {
        case .execute(let run):
            check(running[run] == nil, "a run handed out twice")
            running[run] = key
            if request.method == "inline" {
                session.startedInline()
                let waiters = window.finish(run, response: Frame.Response(), at: now)
                running[run] = nil
                answer(waiters)
                if case .sendResponseAndClose(let close) = session.finishedInline() { perform(close) }
            } else {
                session.track(requestID: request.requestID, token: token, execution: run)
                inFlight[request.requestID] = (token, key)
            }
        case .wait:
            session.track(requestID: request.requestID, token: token, execution: nil)
            inFlight[request.requestID] = (token, key)
        case .replay, .conflict, .refuse:
            answered.insert(waiter(token))
        }
    }

    /// An execution's handler returned: the window answers every copy, and those of this
    /// connection leave its table.
    mutating func handlerFinished(_ run: Window.Run?) {
        guard let run, running.removeValue(forKey: run) != nil else { return }
        let waiters = window.finish(run, response: Frame.Response(), at: now)
        answer(waiters)
        for waiter in waiters where waiter >> 32 == connection {
            let token = UInt64(waiter & 0xFFFF_FFFF)
            let requestID = inFlight.first { $0.value.token == token }?.key
            check(requestID != nil, "the window answers a copy that is not in flight")
            guard let requestID else { continue }
            switch session.handlerFinished(requestID: requestID, token: token) {
            case .sendResponse(let request): took(request)
            case .sendResponseAndClose(let request, let close):
                took(request)
                perform(close)
            case .ignore: check(false, "a finished request the session did not know")
            }
        }
    }

    mutating func handlerTimedOut(_ requestID: String?) {
        guard let requestID, let (token, _) = inFlight[requestID] else { return }
        switch session.handlerTimedOut(requestID: requestID, token: token) {
        case .failTimedOut(let request):
            timedOut(request, key: took(request))
        case .failTimedOutAndClose(let request, let close):
            timedOut(request, key: took(request))
            perform(close)
        case .ignore: check(false, "a request in flight did not time out")
        }
    }

    mutating func cancelled(_ requestID: String) {
        switch session.receivedCancel(requestID: requestID) {
        case .cancelRequest(let request):
            stop(request, key: took(request))
        case .cancelRequestAndClose(let request, let close):
            stop(request, key: took(request))
            perform(close)
        case .closeConnection(let close): perform(close)
        case .ignore: check(inFlight[requestID] == nil, "a Cancel ignored for a request in flight")
        }
    }

    /// The session handed `request` back: it must be one the model has in flight, once.
    @discardableResult
    private mutating func took(_ request: Session.InFlightRequest) -> DedupeKey? {
        let entry = inFlight.removeValue(forKey: request.requestID)
        check(entry?.token == request.token, "request \(request.requestID) handed back twice or wrongly")
        return entry?.key
    }

    /// As `ServerConnection`: a timed-out execution is abandoned with every copy waiting for it; a
    /// timed-out copy stops waiting alone.
    private mutating func timedOut(_ request: Session.InFlightRequest, key: DedupeKey?) {
        guard let run = request.execution else { return stop(request, key: key) }
        running[run] = nil
        answer(window.abandon(run))
    }

    /// As `ServerConnection.stopWaiting`: this copy leaves the execution's waiters; the execution
    /// runs on (cancelled, or as an orphan) until its handler returns.
    private mutating func stop(_ request: Session.InFlightRequest, key: DedupeKey?) {
        let mine = waiter(request.token)
        if let key { _ = window.removeWaiter(key, where: { $0 == mine }) }
        check(answered.insert(mine).inserted, "waiter \(mine) answered twice")
    }

    /// Every request the close hands back is released; executions stay (orphans) for a resend.
    mutating func perform(_ close: Session.Close) {
        check(session.phase == .closed, "a close left the session open")
        for request in close.inFlight { release(request) }
    }

    private mutating func release(_ request: Session.InFlightRequest) {
        stop(request, key: took(request))
    }

    mutating func connectionClosed() {
        for request in session.connectionClosed() { release(request) }
        check(inFlight.isEmpty, "requests in flight outlived their connection")
        connection += 1
        session = Session(configuration: Self.configuration)
        decoder = Self.makeDecoder()
        partialFrame = PartialFrameWatch()
        pushWindow = ReliablePushWindow(size: 3)
        acks = Self.makeAckMerger()
        dedupeClient = DedupeKey.Client("")
        partialTimerArmed = false
        windowTimerArmed = false
    }
}
