import LongLinkCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The thread-local slot that tells a thread which event loop it runs (if any).
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let result = pthread_key_create(&key, nil)
    precondition(result == 0, "pthread_key_create failed: \(result)")
    return key
}()

/// A thread running an epoll loop (`poll` on Darwin), which is also a `SerialExecutor` and a `TaskExecutor`.
///
/// Everything that touches a socket runs on its loop's thread: readiness events, timers, closures passed to
/// ``execute(_:)``, and the jobs of actors whose `unownedExecutor` is this loop (and of tasks that prefer it as
/// their task executor). An actor placed on the loop of a connection sees that connection's callbacks without
/// a thread hop.
///
/// One iteration of the loop waits for readiness (with a timeout taken from the earliest timer, rounded up so
/// it never spins), handles the ready descriptors, fires the timers that are due, runs queued work, and then
/// flushes every connection that was written to during the iteration, so writes are coalesced into as few
/// system calls as possible.
///
/// A loop runs until ``shutdown()``. Work submitted after the loop has stopped is dropped (including executor
/// jobs, whose tasks then never resume): shut a loop down only after the work that uses it is finished.
public final class EventLoop: SerialExecutor, TaskExecutor, @unchecked Sendable {
    private enum Lifecycle {
        case running
        case shuttingDown
        case stopped
    }

    private enum Work {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }

    private enum LocalWork {
        case closure(() -> Void)
        case job(UnownedJob)
    }

    /// What other threads hand to the loop, under `inbox`'s lock.
    private struct Inbox {
        var work: [Work] = []
        /// True while a wake-up was written and the loop has not drained the inbox since.
        var wakeupPending = false
        /// True from the moment the loop decides to wait with a timeout (not zero) until that wait
        /// returns: only then must a submitter write the wake-up descriptor. A busy loop picks up
        /// what was submitted in `runQueuedWork`, or else sees it here and does not block, so waking
        /// it is a system call for nothing, made by every caller's thread under load.
        var loopMayBlock = false
        var lifecycle = Lifecycle.running
        var terminationWaiters: [OneShot<Void>] = []
    }

    /// The name of the loop's thread.
    public let name: String

    private let inbox = Locked(Inbox())
    private let timerIDs = Atomic<UInt64>(1)
    /// Nanoseconds spent outside the selector's wait since the loop started (a server's load).
    private let busyNanoseconds = Atomic<UInt64>(0)
    private let waker: SelectorWaker

    // Everything below belongs to the loop thread.
    let selector: Selector
    private var timers = TimerHeap()
    private var resources: [UInt64: any LoopResource] = [:]
    private var nextResourceID: UInt64 = 1
    private var acceptsResources = true
    private var localWork: [LocalWork] = []
    private var localScratch: [LocalWork] = []
    private var remoteScratch: [Work] = []
    /// Connections written to during this iteration; flushed at its end.
    var flushList: [Connection] = []
    private var sharedReadBuffer: UnsafeMutableRawBufferPointer
    /// Scratch iovecs for vectored writes (one flush at a time per loop).
    let iovecs: UnsafeMutablePointer<iovec>

    /// Creates a loop and starts its thread.
    ///
    /// - Parameter name: the thread's name (Linux keeps the first 15 bytes).
    public init(name: String = "longlink-loop") {
        self.name = name
        do {
            selector = try Selector()
        } catch {
            fatalError("LongLink: cannot create an event loop: \(error)")
        }
        waker = selector.waker
        sharedReadBuffer = .allocate(byteCount: 64 << 10, alignment: 16)
        iovecs = .allocate(capacity: WriteQueue.maxChunksPerWrite)
        spawnThread(name: name) { [self] in
            run()
        }
    }

    deinit {
        sharedReadBuffer.deallocate()
        iovecs.deallocate()
    }

    /// True when called on this loop's thread.
    public var inEventLoop: Bool {
        pthread_getspecific(currentLoopKey) == Unmanaged.passUnretained(self).toOpaque()
    }

    /// Runs `work` on the loop's thread, after the work queued before it (first in, first out per submitting
    /// thread). Callable from any thread, including the loop's own.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        tryExecute(work)
    }

    /// Like ``execute(_:)``, but returns false (and drops `work`) when the loop has stopped.
    @discardableResult
    func tryExecute(_ work: @escaping @Sendable () -> Void) -> Bool {
        if inEventLoop {
            localWork.append(.closure(work))
            return true
        }
        return submit(.closure(work))
    }

    /// Queues `work` from the loop thread itself; it need not be `Sendable` because it never leaves the thread.
    func executeLocal(_ work: @escaping () -> Void) {
        assert(inEventLoop)
        localWork.append(.closure(work))
    }

    /// Queues `work` for the loop; with `wakes` false a loop blocked in its wait is left there (the work
    /// runs on its next turn).
    private func submit(_ work: Work, wakes: Bool = true) -> Bool {
        let (accepted, wake) = inbox.withLock { inbox -> (Bool, Bool) in
            guard inbox.lifecycle != .stopped else {
                return (false, false)
            }
            inbox.work.append(work)
            if !wakes || inbox.wakeupPending || !inbox.loopMayBlock {
                return (true, false)
            }
            inbox.wakeupPending = true
            return (true, true)
        }
        if wake {
            waker.wake()
        }
        return accepted
    }

    /// Runs `work` on the loop after at least `delay` (timers with equal deadlines fire in the order they were
    /// scheduled). Callable from any thread.
    ///
    /// - Returns: a handle for ``cancelTimer(_:)``.
    @discardableResult
    public func scheduleTimer(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> EventLoopTimer {
        let id = timerIDs.wrappingAdd(1, ordering: .relaxed).oldValue
        let entry = TimerHeap.Entry(deadline: Sys.now() &+ Sys.nanoseconds(delay), id: id, work: work)
        if inEventLoop {
            timers.insert(entry)
        } else {
            execute { [self] in
                timers.insert(entry)
            }
        }
        return EventLoopTimer(id: id)
    }

    /// Cancels a timer; a no-op when it already fired or was cancelled. Callable from any thread (from another
    /// thread the cancellation takes effect once the loop runs it, so the timer may still fire before).
    ///
    /// From another thread the cancellation does not wake the loop: it is taken on the loop's next turn (its
    /// next event, or the timer's own deadline at the latest). A request answered before its deadline cancels
    /// its timer from the caller's thread, and a wake-up for that alone would double the loop's wake-ups.
    public func cancelTimer(_ timer: EventLoopTimer) {
        if inEventLoop {
            timers.remove(id: timer.id)
        } else {
            _ = submit(.closure({ [self] in timers.remove(id: timer.id) }), wakes: false)
        }
    }

    /// Runs an executor job on the loop's thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if inEventLoop {
            localWork.append(.job(job))
        } else {
            _ = submit(.job(job))
        }
    }

    /// The time the loop has spent working (outside its wait for events) since it started; the
    /// share of wall time it grows by is how busy the loop is.
    package var busyTime: Duration {
        .nanoseconds(Int64(truncatingIfNeeded: busyNanoseconds.load(ordering: .relaxed)))
    }

    /// This loop as the serial executor of an actor (`nonisolated var unownedExecutor`).
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This loop as a task executor preference (`withTaskExecutorPreference`, `Task(executorPreference:)`).
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Traps unless called on the loop's thread.
    public func checkIsolated() {
        precondition(inEventLoop, "expected to run on event loop \(name)")
    }

    /// True on the loop's thread (lets the runtime answer `assumeIsolated` without trapping).
    public func isIsolatingCurrentContext() -> Bool? {
        inEventLoop
    }

    /// Stops the loop: runs the work already queued, closes every connection, connect attempt and listener the
    /// loop owns (connection handlers get `didCloseWith` a ``LongLinkCore/LongLinkError/Code-swift.struct/shutdown``
    /// error, waiting `send`s throw it), drops pending timers and ends the thread. Returns at once; idempotent;
    /// callable from any thread.
    public func shutdown() {
        let wake = inbox.withLock { inbox -> Bool in
            guard inbox.lifecycle == .running else {
                return false
            }
            inbox.lifecycle = .shuttingDown
            if inbox.wakeupPending {
                return false
            }
            inbox.wakeupPending = true
            return true
        }
        if wake {
            waker.wake()
        }
    }

    /// Shuts the loop down (see ``shutdown()``) and returns once its thread has finished.
    ///
    /// Must not be called from the loop itself (nor from an actor or task running on it).
    public func shutdownAndWait() async {
        precondition(!inEventLoop, "shutdownAndWait() called on the event loop it waits for")
        shutdown()
        let done = OneShot<Void>()
        let stopped = inbox.withLock { inbox -> Bool in
            if inbox.lifecycle == .stopped {
                return true
            }
            inbox.terminationWaiters.append(done)
            return false
        }
        if !stopped {
            await done.value()
        }
    }

    // MARK: - Loop-thread interface for connections, listeners and connect attempts

    /// Registers a resource the loop owns until ``release(_:)``; nil once the loop is past closing its
    /// resources for shutdown (the caller must then close what it holds).
    func adopt(_ resource: any LoopResource) -> UInt64? {
        assert(inEventLoop)
        guard acceptsResources else {
            return nil
        }
        let id = nextResourceID
        nextResourceID += 1
        resources[id] = resource
        return id
    }

    /// Forgets a resource (its events are no longer delivered, even those already collected).
    func release(_ id: UInt64) {
        assert(inEventLoop)
        resources[id] = nil
    }

    /// The loop's read buffer, at least `size` bytes. Valid until the next call.
    func readBuffer(size: Int) -> UnsafeMutableRawBufferPointer {
        if sharedReadBuffer.count < size {
            sharedReadBuffer.deallocate()
            sharedReadBuffer = .allocate(byteCount: size, alignment: 16)
        }
        return UnsafeMutableRawBufferPointer(rebasing: sharedReadBuffer[0..<size])
    }

    // MARK: - The loop

    private func run() {
        pthread_setspecific(currentLoopKey, Unmanaged.passUnretained(self).toOpaque())
        var busySince = Sys.now()
        while true {
            // Computed before taking the lock, which submitters contend for: the timeout if nothing
            // was submitted.
            let localTimeout = nextTimeout()
            let (timeout, running) = inbox.withLock { inbox -> (Int32, Bool) in
                let timeout = inbox.work.isEmpty ? localTimeout : 0
                // Under the lock that submitters append under: a submission either is seen here, or
                // sees that the loop may block and wakes it.
                inbox.loopMayBlock = timeout != 0
                return (timeout, inbox.lifecycle == .running)
            }
            guard running else {
                break
            }
            let waitStart = Sys.now()
            busyNanoseconds.add(waitStart &- busySince, ordering: .relaxed)
            let count = selector.wait(timeoutMilliseconds: timeout)
            busySince = Sys.now()
            if timeout != 0 {
                inbox.withLock { $0.loopMayBlock = false }
            }
            for index in 0..<count {
                if let (id, events) = selector.event(at: index) {
                    resources[id]?.handleEvents(events)
                }
            }
            runExpiredTimers()
            runQueuedWork()
            flushPendingWrites()
        }
        finishShutdown()
        pthread_setspecific(currentLoopKey, nil)
    }

    /// How long the next wait may block, given the loop's own work and timers (-1: until woken).
    private func nextTimeout() -> Int32 {
        if !localWork.isEmpty || !flushList.isEmpty {
            return 0
        }
        guard let deadline = timers.earliestDeadline else {
            return -1
        }
        let now = Sys.now()
        guard deadline > now else {
            return 0
        }
        let milliseconds = (deadline - now + 999_999) / 1_000_000
        return milliseconds >= UInt64(Int32.max) ? Int32.max : Int32(milliseconds)
    }

    /// How many due timers one iteration runs at most. A server whose 100,000 requests time out
    /// together has 100,000 timers due at once, each costing some microseconds (the handler's task
    /// cancelled, a reply written); run in one go they held the loop for about half a second, with
    /// every other connection on it waiting. In slices of this many, the loop goes back to its
    /// sockets every few milliseconds.
    static let expiredTimersPerIteration = 1_024

    private func runExpiredTimers() {
        guard !timers.isEmpty else {
            return
        }
        let now = Sys.now()
        // Timers scheduled by these callbacks wait for the next iteration, so a timer that reschedules itself
        // with no delay cannot starve I/O. At most `expiredTimersPerIteration` run: the rest stay due, the next
        // wait does not block, and I/O and queued work get their turn in between.
        var budget = min(timers.count, Self.expiredTimersPerIteration)
        while budget > 0, let entry = timers.popExpired(now: now) {
            budget -= 1
            entry.work()
        }
    }

    private func runQueuedWork() {
        // Work queued by work runs in the same iteration (an actor hopping back onto its loop does not cost a
        // wake-up), up to a bound that keeps I/O flowing.
        for _ in 0..<64 {
            inbox.withLock { inbox in
                swap(&inbox.work, &remoteScratch)
                inbox.wakeupPending = false
            }
            let ranRemote = !remoteScratch.isEmpty
            for work in remoteScratch {
                switch work {
                case .closure(let closure):
                    closure()
                case .job(let job):
                    job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
                }
            }
            remoteScratch.removeAll(keepingCapacity: true)
            swap(&localWork, &localScratch)
            let ranLocal = !localScratch.isEmpty
            for work in localScratch {
                switch work {
                case .closure(let closure):
                    closure()
                case .job(let job):
                    job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
                }
            }
            localScratch.removeAll(keepingCapacity: true)
            if !ranRemote && !ranLocal {
                return
            }
        }
    }

    private func flushPendingWrites() {
        // Flushing can queue more (a writability change resumes waiting senders), so the list may grow while
        // it is walked.
        var index = 0
        while index < flushList.count {
            let connection = flushList[index]
            index += 1
            connection.flushFromLoop()
        }
        flushList.removeAll(keepingCapacity: true)
    }

    private func finishShutdown() {
        // The work queued before shutdown, and its writes.
        runQueuedWork()
        flushPendingWrites()
        let error = LongLinkError.loopShutDown()
        for id in resources.keys.sorted() {
            resources[id]?.closeForShutdown(error)
        }
        resources.removeAll()
        acceptsResources = false
        // Close callbacks may queue more work; run it until the queue stays empty, then stop accepting any.
        var rounds = 0
        while true {
            timers.removeAll()
            runQueuedWork()
            flushList.removeAll()
            rounds += 1
            let localEmpty = localWork.isEmpty
            let waiters = inbox.withLock { inbox -> [OneShot<Void>]? in
                guard (inbox.work.isEmpty && localEmpty) || rounds > 100 else {
                    return nil
                }
                inbox.lifecycle = .stopped
                inbox.work.removeAll()
                defer { inbox.terminationWaiters.removeAll() }
                return inbox.terminationWaiters
            }
            if let waiters {
                localWork.removeAll()
                timers.removeAll()
                selector.close()
                for waiter in waiters {
                    waiter.resume(())
                }
                return
            }
        }
    }
}
