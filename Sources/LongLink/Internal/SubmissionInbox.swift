import Synchronization

/// Calls handed from their callers' threads to the client's loop, drained in batches.
///
/// Why not one `loop.execute` per call: that allocates a closure per request on the caller's
/// thread and frees it on the loop's, and admits each call in a job of its own. Here only the
/// first caller of a batch schedules a drain, so the loop admits everything that arrived in one
/// pass, reading the clock once.
///
/// Why a lock-free stack of the calls themselves rather than a locked array: a submission is one
/// compare-and-swap on one cache line, where the lock, its state and the array's storage were
/// three lines that every caller's thread and the loop wrote in turn. When the host runs the
/// vCPUs far apart, each of those lines costs about 300 ns to fetch. Taking the whole stack with
/// one exchange has no ABA problem: nothing is ever popped alone.
final class SubmissionInbox: Sendable {
    /// The address of the most recently submitted call, retained (its `nextSubmission` leads to
    /// the older ones); 0 when empty. An integer because raw pointers are not `Sendable`.
    private let head = Atomic<UInt>(0)

    deinit {
        // Calls never taken (the loop stopped first) are only released: their callers were
        // abandoned with the loop, as any work queued on a stopped loop is.
        var abandoned: [PendingCall] = []
        take(into: &abandoned)
    }

    /// Submits the call (its ``PendingCall/submittedCaller`` set); true when the inbox was empty,
    /// so the caller must schedule a drain on the loop (a drain already scheduled takes this call too).
    func append(_ call: PendingCall) -> Bool {
        let node = UInt(bitPattern: Unmanaged.passRetained(call).toOpaque())
        var current = head.load(ordering: .relaxed)
        while true {
            call.nextSubmission = UnsafeMutableRawPointer(bitPattern: current)
            let (exchanged, original) = head.compareExchange(
                expected: current, desired: node, successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return original == 0 }
            current = original
        }
    }

    /// Takes everything submitted so far (on the loop) and appends it to `batch`, oldest first.
    func take(into batch: inout [PendingCall]) {
        var node = UnsafeMutableRawPointer(bitPattern: head.exchange(0, ordering: .acquiring))
        let start = batch.endIndex
        while let pointer = node {
            let call = Unmanaged<PendingCall>.fromOpaque(pointer).takeRetainedValue()
            node = call.nextSubmission
            call.nextSubmission = nil
            batch.append(call)
        }
        batch[start...].reverse()
    }
}
