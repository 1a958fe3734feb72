internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    // MARK: The caller's side

    /// Sends the request and waits for its reply under the configured ``DeadlineStrategy``.
    nonisolated func perform(_ request: PendingRequest) async throws -> [UInt8] {
        // A caller cancelled already never shares the request with the loop: nothing to tell the server.
        if Task.isCancelled { throw CancellationError() }
        if configuration.deadlineStrategy.usesHeap { return try await awaitReply(request) }
        return try await race(request)
    }

    /// The race the design card asks for: the task group's body awaits the reply while one child
    /// sleeps until the deadline and then expires the request. Whichever finishes first decides;
    /// a reply cancels the sleeper, whose timer is released on the loop's next turn (see ``LongLinkClock/sleep(until:on:)``).
    nonisolated func race(_ request: PendingRequest) async throws -> [UInt8] {
        try await withThrowingTaskGroup(of: Void.self, returning: [UInt8].self) { group in
            group.addTask {
                // Cancelled: the reply won, or the caller gave up (the body tells the core).
                guard (try? await self.clock.sleep(until: request.deadline, on: self.loop)) != nil else { return }
                guard !request.isFinished else { return }
                self.onLoop { $0.expire(request.id) }
            }
            defer { group.cancelAll() }
            return try await awaitReply(request)
        }
    }

    /// Registers the request with the core, keyed by its id, and suspends on a `CheckedContinuation`
    /// until the core resumes it: with the reply, an error, a timeout or the caller's cancellation.
    ///
    /// Nonisolated: the caller suspends on its own executor and the loop gets one job that
    /// registers the request, so the reply resumes the caller directly.
    nonisolated func awaitReply(_ request: PendingRequest) async throws -> [UInt8] {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (caller: PendingRequest.Caller) in
                // A caller running on the loop already registers the request in place.
                if loop.inEventLoop {
                    assumeIsolated { $0.admit(request, caller) }
                } else {
                    onLoop { $0.admit(request, caller) }
                }
            }
        } onCancel: {
            // Set before the core is told, so a request it has not registered yet is refused.
            request.abandon()
            guard !request.isFinished else { return }
            onLoop { $0.cancel(request.id) }
        }
    }

    // MARK: The core's side

    /// Registers one request, or resumes its caller at once when it cannot go anywhere; the machine
    /// decides which (``ClientStateMachine/admit(_:caller:now:session:writable:)``).
    func admit(_ request: PendingRequest, _ caller: PendingRequest.Caller) {
        let now = clock.now
        let action = machine.admit(
            request, caller: caller, now: now, session: shared.session.load(ordering: .relaxed),
            writable: { links[$0]?.connection.isWritable ?? false })
        switch action {
        case .refuse(let refusal):
            resume(caller, of: request, with: .failure(error(of: refusal)))
            return
        case .queued:
            break
        case .write(let generation):
            if let link = link(generation) { write(request, on: link, at: now) }
        }
        if configuration.deadlineStrategy.usesHeap { trackDeadline(request) }
    }

    /// What the caller of a refused request gets.
    private func error(of refusal: Machine.Refusal) -> any Error {
        switch refusal {
        case .cancelled:
            return CancellationError()
        case .stopping(let error), .refused(let error):
            return error
        case .endedSession:
            return endedSessionError
        case .expired:
            machine.stats.timeouts += 1
            return LongLinkError(code: .deadlineExceeded, message: "the deadline passed before the request was sent")
        }
    }

    /// The reply's caller, exactly once.
    func resume(
        _ caller: PendingRequest.Caller, of request: PendingRequest, with result: Result<[UInt8], any Error>
    ) {
        guard request.markFinished() else {
            assertionFailure("request \(request.id) resumed twice")
            return
        }
        caller.resume(with: result)
    }

    /// Takes the request off the books and resumes its caller; false if it ended already. What its
    /// end lets happen (the shutdown completes, its link drains, closes or retires), the machine says
    /// (``ClientStateMachine/finish(_:_:)``).
    @discardableResult
    func finish(_ id: UInt64, _ result: Result<[UInt8], any Error>) -> Bool {
        guard let actions = machine.finish(id, result) else { return false }
        run(actions)
        return true
    }

    /// Resumes the callers of entries something else took off the books.
    func fail(_ entries: [RequestBook<PendingRequest.Caller>.Entry], with error: any Error) {
        for entry in entries { resume(entry.caller, of: entry.request, with: .failure(error)) }
    }

    /// The deadline passed: fail the request (``ClientStateMachine/expire(_:)``).
    func expire(_ id: UInt64) {
        run(machine.expire(id))
    }

    /// The caller gave up: fail the request and tell the server if it has it.
    func cancel(_ id: UInt64) {
        run(machine.cancel(id))
    }

    /// Writes the request, or fails it at once when its frame is larger than the server accepts
    /// (sent anyway, it would make the server close the link, and the resend would do it again).
    func write(_ request: PendingRequest, on link: Link, at now: ContinuousClock.Instant, resent: Bool = false) {
        let frame = request.frame(at: now, compressed: link.compresses, resent: resent)
        let size = frame.encodedSize
        guard size <= link.maxFrameBytes else {
            let error = LongLinkError(
                code: .resourceExhausted,
                message: "request of \(size) bytes is larger than the server accepts (\(link.maxFrameBytes) bytes)")
            finish(request.id, .failure(error))
            return
        }
        send(frame, on: link)
        machine.stats.requestsSent += 1
    }

    /// Sends the queue in order (the gate just opened, a reply made room, or the server read what
    /// was written), keeping at most the server's `max_in_flight` written and stopping when the
    /// link's write buffer is full.
    func drainQueue(on link: Link) {
        let now = clock.now
        while let (request, resent) = machine.dequeue(writingOn: link.generation, writable: link.connection.isWritable)
        {
            write(request, on: link, at: now, resent: resent)
        }
    }

    // MARK: Deadlines (``DeadlineStrategy/deadlineHeap``)

    func trackDeadline(_ request: PendingRequest) {
        if let at = machine.trackDeadline(request) { armDeadlineTimer(at: at) }
    }

    /// Moves the one deadline timer to `at`, where the machine placed it.
    private func armDeadlineTimer(at: ContinuousClock.Instant) {
        schedule(.deadline, at: at)
    }

    /// The deadline timer fired: fails the requests whose deadline has passed, a slice at a time;
    /// with more due, the timer fires again at the loop's next turn.
    func deadlinesDue() {
        let now = clock.now
        let due = machine.deadlinesDue(at: now)
        for id in due { expire(id) }
        let full = due.count == Machine.expiriesPerSlice
        if let at = machine.deadlineTimerAfterExpiries(at: now, sliceWasFull: full) { armDeadlineTimer(at: at) }
    }
}
