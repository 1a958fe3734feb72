import LongLinkTransport

/// Calls handed from their callers' threads to the client's loop, drained in batches.
///
/// Why not one `loop.execute` per call: that allocates a closure per request on the caller's
/// thread and frees it on the loop's, and admits each call in a job of its own. Here callers append
/// to one locked array and only the first caller of a batch schedules a drain, so the loop admits
/// everything that arrived in one pass, reading the clock once.
final class SubmissionInbox: Sendable {
    struct Submission {
        let call: PendingCall
        let continuation: PendingCall.Caller
    }

    private struct State {
        var submissions: [Submission] = []
        /// True from the first append of a batch until the loop takes the batch.
        var drainScheduled = false
    }

    private let state = Locked(State())

    /// Appends a submission; true when the caller must schedule a drain on the loop.
    func append(_ call: PendingCall, _ continuation: PendingCall.Caller) -> Bool {
        state.withLock { state in
            state.submissions.append(Submission(call: call, continuation: continuation))
            if state.drainScheduled { return false }
            state.drainScheduled = true
            return true
        }
    }

    /// Takes everything appended so far (on the loop), leaving `spare`'s storage for the next batch.
    func take(swappingWith spare: inout [Submission]) {
        state.withLock { state in
            swap(&state.submissions, &spare)
            state.drainScheduled = false
        }
    }
}
