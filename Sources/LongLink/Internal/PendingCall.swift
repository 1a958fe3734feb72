import LongLinkWire
import Synchronization

/// One request from the moment its caller makes it until it is answered, fails or is given up.
///
/// `finished` is atomic so that the deadline side of the race can see, without a hop to the event
/// loop, that the reply already won. Every other mutable field is touched only by ``ClientCore`` on
/// its loop (so they skip dynamic exclusivity checks, like the core's own hot state), except the two
/// the caller's thread writes before the ``SubmissionInbox`` publishes the call.
final class PendingCall: @unchecked Sendable {
    enum Stage {
        /// Made, not yet seen by the core.
        case new
        /// Waiting in the offline queue, in this slot of it (see ``OfflineQueue``).
        case queued(slot: Int)
        /// Written on the link with this generation.
        case written(UInt64)
        /// Answered, failed or given up.
        case done
    }

    /// A suspended caller: the continuation its outcome resumes.
    typealias Caller = UnsafeContinuation<Outcome, Never>

    // The fields the loop touches for every call come first, next to the object's header and
    // reference count: a mass expiry walks 100,000 cold calls, one or two cache lines each.
    private let finishedFlag = Atomic<Bool>(false)

    @exclusivity(unchecked) var stage = Stage.new
    /// The ``DeadlineBuckets`` bucket holding the call, and its slot there (nil and -1 when not in
    /// one). Unowned: a bucket outlives every call that points at it (it is dropped only once empty
    /// or after clearing these), and a strong reference would cycle.
    @exclusivity(unchecked) unowned(unsafe) var deadlineBucket: DeadlineBucket?
    @exclusivity(unchecked) var deadlineSlot = -1
    /// The call's slot in the core's ``PendingTable`` (-1 when not in it).
    @exclusivity(unchecked) var pendingSlot = -1
    /// `deadline` in nanoseconds from the core's ``DeadlineBuckets`` origin, set when the core
    /// admits the call: the loop's per-call arithmetic in plain integers.
    @exclusivity(unchecked) var deadlineNanoseconds: Int64 = 0
    /// The suspended caller. Unsafe rather than checked: `finishedFlag` already guarantees one
    /// resume, and the checked form costs an allocation per request.
    @exclusivity(unchecked) var continuation: Caller?
    /// The caller as submitted, and the next older call in the ``SubmissionInbox``: written by
    /// the caller's thread before the inbox publishes the call, read by the loop after it takes it.
    @exclusivity(unchecked) var submittedCaller: Caller?
    @exclusivity(unchecked) var nextSubmission: UnsafeMutableRawPointer?

    let id: UInt64
    let method: String
    let payload: [UInt8]
    let metadata: [String: String]
    let deadline: ContinuousClock.Instant
    let idempotent: Bool
    /// Login and subscription calls: sent on `linkGeneration` before the queue opens, never queued.
    let bypassesGate: Bool
    let linkGeneration: UInt64
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

    /// How a call ended, as handed to its caller.
    ///
    /// A timeout carries no error value: the caller builds its `LongLinkError` on its own thread.
    /// Built on the loop instead, 100,000 expiring calls would allocate 100,000 errors there for
    /// the callers' threads to free (or, with one shared error, contend on its reference count).
    enum Outcome: Sendable {
        case reply([UInt8])
        case timedOut
        /// Boxed (indirect) so the outcome stays one word: it is held in several of the caller's
        /// async frames, and frames past the task's first allocator slab cost a kilobyte per call.
        indirect case failed(any Error)

        init(_ result: Result<[UInt8], any Error>) {
            switch result {
            case .success(let payload): self = .reply(payload)
            case .failure(let error): self = .failed(error)
            }
        }

        /// The reply, or the error to throw.
        ///
        /// Consuming: the reply's array moves out to the caller. Copying it out took a retain and
        /// a release of an array the loop allocated, on the caller's thread: when the host runs the
        /// vCPUs far apart, each waits for the array's line to come over from the loop's core.
        consuming func get() throws -> [UInt8] {
            switch self {
            case .reply(let payload): return payload
            case .timedOut: throw PendingCall.timeoutError()
            case .failed(let error): throw error
            }
        }
    }

    static func timeoutError() -> LongLinkError {
        LongLinkError(code: .deadlineExceeded, message: "no reply within the request's timeout")
    }

    /// Resumes the caller exactly once; later calls do nothing.
    func complete(_ result: Result<[UInt8], any Error>) {
        complete(Outcome(result))
    }

    /// Resumes the caller exactly once with `outcome`; later calls do nothing.
    func complete(_ outcome: Outcome) {
        takeCaller(finishingWith: outcome)?.resume(returning: outcome)
    }

    /// Finishes the call with `outcome` (exactly once: nil when it had finished already) and hands
    /// back its suspended caller for whoever resumes it: ``complete(_:)-swift.method`` at once, a
    /// mass expiry off the loop. A caller not suspended yet finds the failure parked on the call.
    func takeCaller(finishingWith outcome: Outcome) -> Caller? {
        guard !finishedFlag.exchange(true, ordering: .acquiringAndReleasing) else { return nil }
        stage = .done
        guard let continuation else {
            switch outcome {
            case .reply: break
            case .timedOut: earlyFailure = Self.timeoutError()
            case .failed(let error): earlyFailure = error
            }
            return nil
        }
        self.continuation = nil
        return continuation
    }

    #if DEBUG
        deinit {
            // A registered call must never be dropped with its caller still suspended.
            assert(continuation == nil, "PendingCall \(id) deallocated with an unresumed continuation")
        }
    #endif
}
