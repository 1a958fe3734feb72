import Synchronization

/// The suspended callers of a mass expiry, resumed in chunks by whoever takes the next one.
///
/// The loop hands a few jobs to the global executor and then takes chunks itself, until none is
/// left. Why the loop takes part: resuming a cold task is the runtime's work, about half a
/// microsecond each, and when another busy thread (a server on the same machine, say) holds one of
/// the cores, the scheduler gives the jobs only the other one. With the loop resuming beside
/// them, the callers' share of the machine rises from one core in two to about three in four.
final class ExpiredCallers: Sendable {
    /// How many callers one take resumes.
    static let chunkSize = 256
    /// How far ahead of the caller being resumed its task is prefetched.
    static let lookahead = 16

    private let callers: [PendingCall.Caller]
    private let nextChunk = Atomic<Int>(0)

    init(_ callers: [PendingCall.Caller]) {
        self.callers = callers
    }

    var count: Int { callers.count }

    /// Resumes chunks until none is left; how many callers this call resumed.
    func resumeChunks() -> Int {
        var resumed = 0
        callers.withUnsafeBufferPointer { callers in
            while true {
                let start = nextChunk.add(1, ordering: .relaxed).oldValue &* Self.chunkSize
                guard start < callers.count else { break }
                let end = min(start + Self.chunkSize, callers.count)
                for index in start..<end {
                    if index + Self.lookahead < end {
                        Prefetch.task(of: callers[index + Self.lookahead], lines: Prefetch.coldTaskLines)
                    }
                    callers[index].resume(returning: .timedOut)
                }
                resumed += end - start
            }
        }
        return resumed
    }
}
