internal import LongLinkCore
internal import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The durable store's engine: one SQLite file under a data directory, written by a thread of its
/// own, with no knowledge of the server's store protocols (``DurableStore`` adapts it to them).
///
/// Callers queue operations and await them; the writer thread takes everything queued at each
/// turn, answers the reads, runs the writes in one transaction and resumes their callers once it
/// commits (see ``DurableWriter/commit(_:)``). SQLite blocks, so it never runs on an event loop or
/// in the cooperative pool. The directory's lock (``DurableDirectoryLock``) is held until
/// ``close()``.
final class DurableEngine: Sendable {
    /// The database file.
    let path: String
    let configuration: DurableStoreConfiguration
    /// Counters the writer keeps.
    let statistics = Locked(DurableStoreStatistics())
    /// The store's id, drawn when its file was created.
    let storeID: Int64
    let queue = DurableQueue()
    /// The most jobs one turn takes: the rest wait for the next.
    static let turnLimit = 4096

    /// Opens (creating when missing) the store in `directory`, with wall-clock time from `now`
    /// (ms since 1970). Throws the errors of ``DurableStore/init(directory:configuration:)``.
    init(
        directory: String, configuration: DurableStoreConfiguration,
        now: @escaping @Sendable () -> Int64 = DurableEngine.wallClock
    ) throws(LongLinkError) {
        try configuration.validate()
        let lock = try DurableDirectoryLock(directory: directory)
        let path = DurableDirectoryLock.join(directory, DurableSchema.fileName)
        self.path = path
        self.configuration = configuration
        let database: SQLiteDatabase
        do throws(SQLiteError) {
            database = try SQLiteDatabase(path: path)
        } catch {
            throw DurableFailure.error(error, path: path, doing: "opening the store")
        }
        let (storeID, created) = try DurableSchema.prepare(
            database, policy: configuration.sync, verify: configuration.verifiesOnOpen)
        self.storeID = storeID
        let writer = DurableWriter(
            database: database, lock: lock, configuration: configuration, statistics: statistics, now: now)
        let unknown: Int
        var lost: Int64 = 0
        var renumbered = 0
        do throws(SQLiteError) {
            // Before anything is committed: the mark still counts what the last process committed.
            lost = try writer.resumeCommits(mark: DurableCommitMark(directory: directory))
            if lost > 0 { renumbered = try writer.startNewEpochs() }
            unknown = try writer.markRunningClaimsUnknown()
        } catch {
            throw DurableFailure.error(error, path: path, doing: "opening the store")
        }
        if created {
            configuration.logger?("LongLink durable store: created \(path) (sync \(configuration.sync))")
        }
        if lost > 0 {
            configuration.logger?(
                "LongLink durable store: \(path) lacks its last \(lost) commits (its write-ahead log was cut: a torn"
                    + " write or a damaged disk); the pushes, acknowledgements and stored replies in them are lost."
                    + " \(renumbered) principals' pushes go on in new epochs, so no seq a client saw is given again")
        }
        if unknown > 0 {
            configuration.logger?(
                "LongLink durable store: \(path): \(unknown) requests were running when the store last closed;"
                    + " their copies are answered UNKNOWN, never run again")
        }
        let queue = self.queue
        let interval = configuration.sync.checkpointInterval
        spawnThread(name: "longlink-durable") { Self.serve(writer, queue, checkpointInterval: interval) }
    }

    deinit {
        // Dropped without close(): the writer finishes what is queued, closes the file and ends.
        queue.refuse()
    }

    /// Now in ms since 1970 (the system's real-time clock).
    static func wallClock() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }

    // MARK: Pushes

    /// Stores a push under the principal's next seq, durably as the sync policy promises, before
    /// returning. Throws ``LongLinkError/Code-swift.struct/resourceExhausted`` when the principal is
    /// at its budget (or the disk is full), ``LongLinkError/Code-swift.struct/unavailable`` when the
    /// file cannot be written.
    func append(principal: String, topic: String, payload: [UInt8]) async throws(LongLinkError) -> StoredPush {
        let name = Array(principal.utf8)
        let stored = try await write("storing a push") { writer throws(SQLiteError) in
            try writer.append(principal: name, topic: topic, payload: payload)
        }
        guard let stored else {
            let (capacity, bytes) = (configuration.budgets.pushCapacityPerPrincipal, configuration.budgets.pushBytesPerPrincipal)
            throw LongLinkError(
                code: .resourceExhausted,
                message:
                    "push store full for this principal (at most \(capacity) unacknowledged pushes and \(bytes) bytes)")
        }
        return stored
    }

    /// The unacknowledged pushes of `principal` with `seq > after`, in seq order, at most `limit`.
    func unacknowledged(principal: String, after seq: UInt64, limit: Int) async throws(LongLinkError) -> [StoredPush] {
        let name = Array(principal.utf8)
        return try await read("reading pushes") { writer throws(SQLiteError) in
            try writer.unacknowledged(principal: name, after: seq, limit: limit)
        }
    }

    /// Deletes the given pushes of `principal` numbered in `epoch` (0: any), in the next turn's
    /// transaction; unknown seqs are ignored.
    func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) async throws(LongLinkError) {
        guard !seqs.isEmpty else { return }
        let name = Array(principal.utf8)
        _ = try await write("deleting acknowledged pushes") { writer throws(SQLiteError) in
            try writer.acknowledge(principal: name, seqs: seqs, epoch: epoch)
        }
    }

    /// How many pushes of `principal` wait for an acknowledgement.
    func unacknowledgedCount(principal: String) async throws(LongLinkError) -> Int {
        let name = Array(principal.utf8)
        return try await read("counting pushes") { writer throws(SQLiteError) in
            try writer.unacknowledgedCount(principal: name)
        }
    }

    // MARK: De-duplication

    /// Claims the request for its runner (its claim lasts while the store is open; `term` is kept
    /// for the record), or reports what the window holds for it.
    func claim(_ key: DurableRequestKey, term: Duration, window: Duration) async throws(LongLinkError) -> DurableClaim {
        try await write("claiming a request") { writer throws(SQLiteError) in
            try writer.claim(key, term: term, window: window)
        }
    }

    /// Stores the reply of a claimed request for `window` (or its "not kept" mark, over the budgets).
    func finish(_ key: DurableRequestKey, reply: [UInt8], window: Duration) async throws(LongLinkError)
        -> DurableFinish
    {
        try await write("storing a reply") { writer throws(SQLiteError) in
            try writer.finish(key, reply: reply, window: window)
        }
    }

    /// Forgets a running claim; false when the entry held none.
    func abandon(_ key: DurableRequestKey) async throws(LongLinkError) -> Bool {
        try await write("abandoning a request") { writer throws(SQLiteError) in try writer.abandon(key) }
    }

    /// Claims as ``claim(_:term:window:)`` does, again while the request runs in this process,
    /// until it is no longer running, `deadline` passes or the task is cancelled (then `running`).
    /// Checks every 5 ms, doubling to 200 ms: a copy waiting for its original is rare here (the
    /// server's own window joins copies that reach it).
    func awaitOutcome(
        _ key: DurableRequestKey, term: Duration, window: Duration, until deadline: ContinuousClock.Instant
    ) async throws(LongLinkError) -> DurableClaim {
        var interval = Duration.milliseconds(5)
        while true {
            let found = try await claim(key, term: term, window: window)
            guard found == .running, !Task.isCancelled else { return found }
            let now = ContinuousClock.now
            guard now < deadline else { return found }
            do {
                try await Task.sleep(until: min(deadline, now.advanced(by: interval)), clock: .continuous)
            } catch {
                return .running
            }
            interval = min(interval * 2, .milliseconds(200))
        }
    }

    // MARK: Life

    /// Finishes what is queued, closes the file and releases the directory; later operations throw
    /// ``LongLinkError/Code-swift.struct/shutdown``. Returns once the directory is free for
    /// another store. Safe to call more than once.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            if !queue.enqueue(.close { continuation.resume() }) { continuation.resume() }
        }
    }

    // MARK: The writer thread

    /// Queues a write and waits for its turn's commit.
    private func write<Value: Sendable>(
        _ doing: String, _ body: @escaping @Sendable (DurableWriter) throws(SQLiteError) -> Value
    ) async throws(LongLinkError) -> Value {
        let path = self.path
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Value, LongLinkError>, Never>) in
            let staged = Staged<Value>()
            let write = DurableWrite(
                run: { writer throws(SQLiteError) in staged.value = try body(writer) },
                finish: { failure in
                    if let failure {
                        continuation.resume(
                            returning: .failure(DurableFailure.error(failure, path: path, doing: doing)))
                    } else if let value = staged.value {
                        continuation.resume(returning: .success(value))
                    } else {
                        continuation.resume(
                            returning: .failure(LongLinkError(code: .internalError, message: "\(path): \(doing) lost")))
                    }
                })
            if !queue.enqueue(.write(write)) { continuation.resume(returning: .failure(DurableFailure.closed(path))) }
        }
        return try result.get()
    }

    /// Queues a read, answered in its turn before the turn's writes.
    func read<Value: Sendable>(
        _ doing: String, _ body: @escaping @Sendable (DurableWriter) throws(SQLiteError) -> Value
    ) async throws(LongLinkError) -> Value {
        let path = self.path
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Value, LongLinkError>, Never>) in
            let read = DurableJob.read { writer in
                do throws(SQLiteError) {
                    continuation.resume(returning: .success(try body(writer)))
                } catch {
                    continuation.resume(returning: .failure(DurableFailure.error(error, path: path, doing: doing)))
                }
            }
            if !queue.enqueue(read) { continuation.resume(returning: .failure(DurableFailure.closed(path))) }
        }
        return try result.get()
    }

    /// The writer thread: a turn per wake-up until a close is taken, then the file is closed and
    /// the directory released before the closers hear of it.
    private static func serve(_ writer: DurableWriter, _ queue: DurableQueue, checkpointInterval: Duration?) {
        let interval = checkpointInterval.map { UInt64(DurableWriter.milliseconds($0)) * 1_000_000 }
        var unsyncedSince: UInt64?
        var closers: [@Sendable () -> Void] = []
        while closers.isEmpty {
            let deadline = unsyncedSince.flatMap { since in interval.map { since + $0 } }
            var writes: [DurableWrite] = []
            for job in queue.take(limit: turnLimit, until: deadline) {
                switch job {
                case .read(let read): read(writer)
                case .write(let write): writes.append(write)
                case .close(let closed): closers.append(closed)
                }
            }
            if !writes.isEmpty {
                writer.commit(writes)
                if interval != nil, unsyncedSince == nil { unsyncedSince = DurableQueue.monotonicNanoseconds() }
            }
            if let since = unsyncedSince, let interval,
                DurableQueue.monotonicNanoseconds() >= since + interval || !closers.isEmpty
            {
                writer.checkpoint()
                unsyncedSince = nil
            }
        }
        writer.close()
        for closed in closers + queue.finish() { closed() }
    }
}

/// A write's outcome between its run and its commit; touched by the writer thread only.
private final class Staged<Value>: @unchecked Sendable {
    var value: Value?
}
