extension ClientCore {
    /// Waits for the call's reply under the configured ``DeadlineStrategy``.
    nonisolated(nonsending) func perform(_ call: PendingCall) async throws -> [UInt8] {
        // A caller cancelled already never shares the call with the loop: nothing to tell the server.
        if Task.isCancelled { throw CancellationError() }
        guard configuration.deadlineStrategy.usesHeap else { return try await race(call) }
        // The deadline-index form: the core's single timer fails the call at its deadline; the
        // cancellation handler runs outside the actor and hops to the loop only when needed. Kept
        // in this one function: every nested async call adds a frame to the caller's task, and
        // frames past the task's first allocator slab cost a kilobyte more per pending request.
        let outcome = await withTaskCancellationHandler {
            await withUnsafeContinuation { continuation in self.submit(call, continuation) }
        } onCancel: {
            guard !call.isFinished else { return }
            self.loop.execute { self.assumeIsolated { $0.cancel(call) } }
        }
        // Whoever resumed us set the call's finished flag first. Reading it also shows
        // ThreadSanitizer that the outcome was written before it is read here: a failure the loop
        // hands back during admission can resume the continuation before this task has
        // suspended, a handoff inside the runtime that ThreadSanitizer does not see
        // (swiftlang/swift#57803).
        assert(call.isFinished, "a caller resumed before its call finished")
        return try outcome.get()
    }

    /// The race the design card asks for: the caller awaits its continuation in the task group's
    /// body while one child sleeps until the deadline. Whichever finishes first decides; a reply
    /// cancels the sleeper, whose timer is released at once.
    nonisolated func race(_ call: PendingCall) async throws -> [UInt8] {
        try await withThrowingTaskGroup(of: Void.self, returning: [UInt8].self) { group in
            group.addTask {
                do {
                    try await self.clock.sleep(until: call.deadline, on: self.loop)
                } catch {
                    // Cancelled: either the reply won (nothing to do) or the caller gave up.
                    if !call.isFinished { await self.cancel(call) }
                    return
                }
                await self.expire(call)
            }
            defer { group.cancelAll() }
            let outcome = await self.outcome(of: call)
            // As in `perform`: reading the finished flag shows ThreadSanitizer that the outcome was
            // written before it is read, when the loop failed the call at admission and resumed
            // this task before it had suspended (swiftlang/swift#57803).
            assert(call.isFinished, "a caller resumed before its call finished")
            return try outcome.get()
        }
    }
}
