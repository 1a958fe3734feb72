#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Work for the durable store's writer thread.
enum DurableJob: Sendable {
    /// Reads: run outside the turn's transaction, answered at once (a read never waits for an fsync,
    /// nor fails with the writes of its turn).
    case read(@Sendable (DurableWriter) -> Void)
    /// A write: run inside the turn's transaction, answered once it commits.
    case write(DurableWrite)
    /// Close once everything queued before is done; called when closed.
    case close(@Sendable () -> Void)
}

/// A write of the turn's transaction: `run` stages its outcome (throwing only SQLite's errors,
/// which undo this write alone, or the whole turn when SQLite rolled the transaction back), and
/// `finish` answers its caller after the commit: nil when it committed, else why not.
struct DurableWrite: Sendable {
    let run: @Sendable (DurableWriter) throws(SQLiteError) -> Void
    let finish: @Sendable (SQLiteError?) -> Void
}

/// The jobs waiting for the writer thread, guarded by a pthread mutex with a condition the writer
/// sleeps on. Callers only append; the writer takes everything queued at each turn, so that all
/// the writes that arrived during one commit share the next one.
final class DurableQueue: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    // Guarded by `mutex`.
    private var jobs: [DurableJob] = []
    private var closed = false
    /// The writer has ended: nothing will be taken any more.
    private var finished = false

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        #if canImport(Glibc)
            var attributes = pthread_condattr_t()
            pthread_condattr_init(&attributes)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
            pthread_cond_init(condition, &attributes)
            pthread_condattr_destroy(&attributes)
        #else
            pthread_cond_init(condition, nil)
        #endif
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Queues `job`; false when the store is closing (the job is not queued: its caller answers
    /// itself). A close is queued until the writer has ended, so that each close caller hears when
    /// the file is closed; after that it is refused too (the store is closed already).
    func enqueue(_ job: DurableJob) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if case .close = job, !finished {
            closed = true
        } else if closed {
            return false
        }
        let wake = jobs.isEmpty
        jobs.append(job)
        if wake { pthread_cond_signal(condition) }
        return true
    }

    /// How many jobs wait for the writer (tests: all of them queued before it is let go).
    var count: Int {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return jobs.count
    }

    /// Refuses jobs from now on, without waiting (a store dropped without closing).
    func refuse() {
        _ = enqueue(.close {})
    }

    /// The writer ends: the closes queued since its last turn, to be called (nothing else can be
    /// queued once a close is).
    func finish() -> [@Sendable () -> Void] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        finished = true
        defer { jobs.removeAll() }
        return jobs.compactMap { job in
            if case .close(let closed) = job { return closed }
            return nil
        }
    }

    /// Everything queued, at most `limit` jobs (the rest wait for the next turn); when nothing is,
    /// sleeps until something is or `deadline` (a monotonic time in ns) passes (then returns none).
    func take(limit: Int, until deadline: UInt64?) -> [DurableJob] {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while jobs.isEmpty {
            guard let deadline else {
                pthread_cond_wait(condition, mutex)
                continue
            }
            let now = Self.monotonicNanoseconds()
            guard now < deadline else { return [] }
            Self.wait(condition, mutex, nanoseconds: deadline - now)
        }
        if jobs.count <= limit {
            defer { jobs.removeAll(keepingCapacity: true) }
            return jobs
        }
        defer { jobs.removeFirst(limit) }
        return Array(jobs.prefix(limit))
    }

    /// Now on the monotonic clock, in ns.
    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    private static func wait(
        _ condition: UnsafeMutablePointer<pthread_cond_t>, _ mutex: UnsafeMutablePointer<pthread_mutex_t>,
        nanoseconds: UInt64
    ) {
        #if canImport(Glibc)
            // The condition runs on CLOCK_MONOTONIC (see init): the deadline is absolute there.
            let target = monotonicNanoseconds() + nanoseconds
            var deadline = timespec(tv_sec: Int(target / 1_000_000_000), tv_nsec: Int(target % 1_000_000_000))
            _ = pthread_cond_timedwait(condition, mutex, &deadline)
        #else
            var interval = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
            _ = pthread_cond_timedwait_relative_np(condition, mutex, &interval)
        #endif
    }
}
