internal import LongLinkWire

/// Requests: the one route decision for a new request, the queue's drain, and what a request's end
/// does to the link it was written on.
extension ClientStateMachine {
    /// Why a new request is refused before it is recorded.
    enum Refusal {
        /// Its caller gave up before the core saw it.
        case cancelled
        /// The client stops: shutting down, or the session ended for good with this error.
        case stopping(LongLinkError)
        /// Made in a session that ended since: it must not run as the next user.
        case endedSession
        /// Its deadline passed before it could be sent.
        case expired
        /// The book refused it (the offline queue is full, or its id is pending already), or its
        /// link is gone (a login request of a link that dropped).
        case refused(LongLinkError)
    }

    /// What to do with a request just made.
    enum AdmitAction {
        /// Write it on the link of this generation now (it is recorded as written there).
        case write(UInt64)
        /// It waits in the offline queue.
        case queued
        /// Resume its caller with the refusal's error; it was not recorded.
        case refuse(Refusal)
    }

    /// Records a request made in `request.session` (checked against the current `session`) at
    /// `now`, and says where it goes. A request that may go on the open link still waits in line
    /// while others wait, while the server's `max_in_flight` are written, or while the link's write
    /// buffer is full (`writable` says, by generation): rather than be refused by the server or
    /// pile up in the buffer of a server that does not read. Login requests (`bypassesGate`) go
    /// only on their own link and never wait.
    mutating func admit(
        _ request: PendingRequest, caller: Caller, now: ContinuousClock.Instant, session: UInt64,
        writable: (UInt64) -> Bool
    ) -> AdmitAction {
        if request.isAbandoned { return .refuse(.cancelled) }
        if let error = links.admissionError { return .refuse(.stopping(error)) }
        if let made = request.session, made != session { return .refuse(.endedSession) }
        if now >= request.deadline { return .refuse(.expired) }
        var route = links.route(bypassesGate: request.bypassesGate, generation: request.linkGeneration)
        if case .write(let generation) = route, !request.bypassesGate,
            book.queuedCount > 0 || book.writtenCount >= inFlightLimit(generation) || !writable(generation)
        {
            route = .queue
        }
        switch book.admit(request, caller: caller, route: route) {
        case .refuse(let error): return .refuse(.refused(error))
        case .queued: return .queued
        case .write:
            guard case .write(let generation) = route else { preconditionFailure("written without a link") }
            return .write(generation)
        }
    }

    /// The next queued request to write on the open link of `generation`, now recorded as written
    /// there, and whether that write is a copy of one written on an earlier link; nil when the
    /// link is not open, the server's `max_in_flight` are written, the link is not `writable`, or
    /// nothing waits.
    mutating func dequeue(writingOn generation: UInt64, writable: Bool) -> (request: PendingRequest, resent: Bool)? {
        guard links.phase == .open(generation), book.writtenCount < inFlightLimit(generation), writable else {
            return nil
        }
        return book.dequeue(writingOn: generation)
    }

    /// Takes request `id` off the books (answered, failed, timed out, cancelled), wherever it was;
    /// the core resumes the entry's caller, completes a shutdown that waited for it
    /// (``shutdownIsIdle``), then asks ``writtenRequestEnded(on:)`` what its link does.
    mutating func remove(_ id: UInt64) -> RequestBook<Caller>.Entry? {
        book.remove(id)
    }

    /// Takes request `id` off the books with `result` (answered, failed, timed out, cancelled): its
    /// caller resumes, a shutdown that waited for it completes, and its link drains, closes or
    /// retires (``writtenRequestEnded(on:)``). Nil when it ended already.
    mutating func finish(_ id: UInt64, _ result: Result<[UInt8], any Error>) -> [Action]? {
        guard let entry = book.remove(id) else { return nil }
        var actions: [Action] = [.resume(entry, result)]
        guard case .written(let generation) = entry.stage else {
            if shutdownIsIdle { actions.append(.completeShutdown) }
            return actions
        }
        if shutdownIsIdle {
            // What the link does is asked after the shutdown completed, which changes the links.
            actions += [.completeShutdown, .writtenRequestEnded(generation)]
        } else if let action = writtenRequestEnded(on: generation) {
            actions.append(action)
        }
        return actions
    }

    /// The caller of request `id` gave up: it fails, and the server is told when it has it.
    mutating func cancel(_ id: UInt64) -> [Action] {
        guard let entry = book[id] else { return [] }
        stats.cancellations += 1
        var actions: [Action] = []
        if case .written(let generation) = entry.stage {
            actions.append(.send(.cancel(Frame.Cancel(requestID: String(id))), on: generation))
        }
        return actions + (finish(id, .failure(CancellationError())) ?? [])
    }

    /// The deadline of request `id` passed: it fails, counted as a timeout, unless it ended already.
    ///
    /// No `Cancel` goes out: the request carried its remaining budget in `timeout_ms`, so the
    /// server's own timer ends the handler at the same moment.
    mutating func expire(_ id: UInt64) -> [Action] {
        guard let actions = finish(id, .failure(PendingRequest.timeoutError())) else { return [] }
        stats.timeouts += 1
        return actions
    }

    /// A request written on `generation` ended: the one decision between draining the queue on the
    /// open link, closing a link drained after `GoAway`, and retiring a migrated link.
    mutating func writtenRequestEnded(on generation: UInt64) -> Action? {
        if book.queuedCount > 0, links.phase == .open(generation) { return .drainQueue(generation) }
        if case .draining = links.phase { return closeIfDrained(generation) ? .closeDrained(generation) : nil }
        if links.role(of: generation) == .retiring { return retireIfDrained(generation) ? .retire(generation) : nil }
        return nil
    }

    /// After a `GoAway`, true (once) when nothing written on the draining link waits for a reply.
    private mutating func closeIfDrained(_ generation: UInt64) -> Bool {
        !book.hasWritten(on: generation) && links.drained(generation)
    }

    /// True (once) when nothing written on the retiring link of `generation` waits for a reply:
    /// the client says `GoAway` there (no ack goes there any more) and closes it.
    mutating func retireIfDrained(_ generation: UInt64) -> Bool {
        guard !book.hasWritten(on: generation), links.retiredLinkDrained(generation) else { return false }
        ledger.linkGoingAway(generation)
        return true
    }

    /// Hands back every request (the session ended, or the client stopped).
    mutating func removeAllRequests() -> [RequestBook<Caller>.Entry] {
        book.removeAll()
    }
}
