import LongLinkWire
import Synchronization

/// One request from the moment its caller makes it until it is answered, fails or is given up.
///
/// `finished` is atomic so that the deadline side of the race can see, without a hop to the event
/// loop, that the reply already won. Every other field is touched only by ``ClientCore`` on its loop
/// (so the mutable ones skip dynamic exclusivity checks, like the core's own hot state).
final class PendingCall: @unchecked Sendable {
    enum Stage {
        /// Made, not yet seen by the core.
        case new
        /// Waiting in the offline queue.
        case queued
        /// Written on the link with this generation.
        case written(UInt64)
        /// Answered, failed or given up.
        case done
    }

    let id: UInt64
    let method: String
    let payload: [UInt8]
    let metadata: [String: String]
    let deadline: ContinuousClock.Instant
    let idempotent: Bool
    /// Login and subscription calls: sent on `linkGeneration` before the queue opens, never queued.
    let bypassesGate: Bool
    let linkGeneration: UInt64

    private let finishedFlag = Atomic<Bool>(false)

    @exclusivity(unchecked) var stage = Stage.new
    /// The ``DeadlineBuckets`` bucket holding the call, and its slot there (nil and -1 when not in
    /// one). Unowned: a bucket outlives every call that points at it (it is dropped only once empty
    /// or after clearing these), and a strong reference would cycle.
    @exclusivity(unchecked) unowned(unsafe) var deadlineBucket: DeadlineBucket?
    @exclusivity(unchecked) var deadlineSlot = -1
    /// The suspended caller. Unsafe rather than checked: `finishedFlag` already guarantees one
    /// resume, and the checked form costs an allocation per request.
    @exclusivity(unchecked) var continuation: UnsafeContinuation<[UInt8], any Error>?
    /// Set when the call was given up before the core registered it.
    @exclusivity(unchecked) var earlyFailure: (any Error)?

    init(
        id: UInt64, method: String, payload: [UInt8], metadata: [String: String], deadline: ContinuousClock.Instant,
        idempotent: Bool, bypassesGate: Bool = false, linkGeneration: UInt64 = 0
    ) {
        self.id = id
        self.method = method
        self.payload = payload
        self.metadata = metadata
        self.deadline = deadline
        self.idempotent = idempotent
        self.bypassesGate = bypassesGate
        self.linkGeneration = linkGeneration
    }

    var isFinished: Bool { finishedFlag.load(ordering: .acquiring) }

    var isWritten: Bool {
        if case .written = stage { return true }
        return false
    }

    /// Resumes the caller exactly once; later calls do nothing.
    func complete(_ result: Result<[UInt8], any Error>) {
        guard !finishedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stage = .done
        if let continuation {
            self.continuation = nil
            continuation.resume(with: result)
        } else if case .failure(let error) = result {
            earlyFailure = error
        }
    }

    #if DEBUG
        deinit {
            // A registered call must never be dropped with its caller still suspended.
            assert(continuation == nil, "PendingCall \(id) deallocated with an unresumed continuation")
        }
    #endif
}
