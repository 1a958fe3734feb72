/// Callers the loop finished while it handled one read's frames, resumed together at the end.
///
/// Resuming a caller is the runtime's work on the caller's side: it writes the caller's task
/// status and async context and enqueues the task on the global executor. Those lines were last
/// written by the caller's thread, so on the loop each resume waits for them to cross between
/// cores. A batch of ``offLoopThreshold`` or more is handed to the global executor as jobs of at
/// most ``chunkSize`` resumes: there the resumes run on the callers' own threads, beside the
/// callers they wake, and the loop goes back to reading. Fewer are resumed on the loop, where a
/// lone reply costs no extra hop (the 1-in-flight latency path).
///
/// Exactly-once holds as before: a caller is taken from its call (``PendingCall/takeCaller(finishingWith:)``)
/// before it joins the batch, and the batch resumes each one once.
struct ResumeBatch {
    /// From this many callers in one batch, they are resumed off the loop.
    static let offLoopThreshold = 16
    /// How many callers one job off the loop resumes (several jobs let every core take part).
    static let chunkSize = 128
    /// How far ahead of the caller being resumed a job prefetches its task: the task's lines were
    /// last written on the caller's core, and fetching several at once overlaps their transfers.
    static let lookahead = 8

    private var callers: [PendingCall.Caller] = []
    private var outcomes: [PendingCall.Outcome] = []

    var isEmpty: Bool { callers.isEmpty }
    var count: Int { callers.count }

    mutating func append(_ caller: PendingCall.Caller, _ outcome: PendingCall.Outcome) {
        callers.append(caller)
        outcomes.append(outcome)
    }

    /// Resumes every caller in the batch (on the loop or off it, see the type) and empties it;
    /// how many were handed off the loop.
    @discardableResult
    mutating func resumeAll() -> Int {
        guard !callers.isEmpty else { return 0 }
        if callers.count < Self.offLoopThreshold {
            for index in callers.indices { callers[index].resume(returning: outcomes[index]) }
            callers.removeAll(keepingCapacity: true)
            outcomes.removeAll(keepingCapacity: true)
            return 0
        }
        let handedOff = callers.count
        var start = 0
        while start < callers.count {
            let end = min(start + Self.chunkSize, callers.count)
            let chunk = Array(zip(callers[start..<end], outcomes[start..<end]))
            Task.detached {
                for index in chunk.indices {
                    if index + Self.lookahead < chunk.endIndex {
                        Prefetch.task(of: chunk[index + Self.lookahead].0, lines: Prefetch.taskHeadLines)
                    }
                    chunk[index].0.resume(returning: chunk[index].1)
                }
            }
            start = end
        }
        callers.removeAll(keepingCapacity: true)
        outcomes.removeAll(keepingCapacity: true)
        return handedOff
    }
}
