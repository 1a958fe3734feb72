extension ClientCore {
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
            return try await self.submit(call)
        }
    }
}
