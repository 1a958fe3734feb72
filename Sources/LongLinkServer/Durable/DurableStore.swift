internal import LongLinkCore
internal import LongLinkTransport

/// Reliable pushes and the de-duplication window in one SQLite file on this machine's disk, so
/// that a server's restart (a deploy, a crash) loses neither: the store a single server keeps
/// what it promised in.
///
/// ```swift
/// let server = LongLinkServer(
///     configuration: configuration, router: router, stores: try .durable(directory: "/var/lib/quotes/longlink"))
/// ```
///
/// **What is kept.** Each principal's unacknowledged pushes with their epoch and seq, and the
/// de-dup window's entries (stored replies, with their expiry), in `longlink.sqlite` under the
/// data directory (WAL mode: `longlink.sqlite-wal` beside it). A producer's
/// ``LongLinkServer/push(to:topic:payload:)`` returns once its push is committed, as durably as
/// ``DurableStoreConfiguration/sync`` promises (``DurableSyncPolicy``). Writes are group-committed:
/// a thread of the store's own takes every write queued since its last commit (pushes,
/// acknowledgements, claims, replies) and commits them in one transaction, one `fsync` for all.
///
/// **Restarts.** On opening, each principal's epoch and next seq come from the file, so a client
/// that reconnects gets with `Sync` every push it had not acknowledged, under the seqs it knew;
/// a principal with nothing stored starts a new random epoch, its seqs above every seq it was
/// given: no seq is given twice. A file that lacks commits the store made (its write-ahead log
/// cut by a torn write or a damaged disk, whose tail SQLite drops without a word; the store counts
/// its commits in `longlink.commits` beside it) opens with what is left, and every principal's
/// pushes go on in a new epoch, which the store's log says. A request the old process answered
/// is replayed from its stored reply; one the old process was still running when it stopped is
/// answered `UNKNOWN` (outcome unknown) for at least the window, never run a second time, as a
/// fleet's store answers for a server that died running it. A reply the server had sent but not
/// yet stored when the process died counts as running.
///
/// **Failures.** A file that is not a readable LongLink store (not a database, damaged, of a newer
/// schema, another application's) makes ``init(directory:configuration:)`` throw an error that
/// names it; it is never reset silently. A second store on the same directory, in this process or
/// another, is refused while this one is open (an exclusive lock on `longlink.lock`, which the
/// kernel drops when the process dies). While the disk is full a write throws
/// ``LongLinkError/Code-swift.struct/resourceExhausted``, and while the file cannot be written (a
/// read-only directory, an I/O error) ``LongLinkError/Code-swift.struct/unavailable``; nothing
/// stored is damaged and reads go on.
///
/// The server owns a store it is given: it closes it when its ``LongLinkServer/run()`` returns. A
/// server started later opens the directory again with a new store.
public final class DurableStore: Sendable {
    /// The data directory.
    public let directory: String
    /// The configuration it opened with.
    public let configuration: DurableStoreConfiguration
    let engine: DurableEngine
    /// The servers of this process that observe the store's pushes.
    let observers = PushObservers()
    /// The de-dup window the server last gave a claim (its ``ServerConfiguration/dedupeWindow``):
    /// the calls that carry none take it as theirs.
    let lastWindow = Locked(Duration.seconds(120))

    /// Opens the store in `directory` (made when missing), creating its file when there is none.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` for invalid budgets;
    /// ``LongLinkError/Code-swift.struct/failedPrecondition`` when another store holds the
    /// directory, or the file is of a newer schema or another application; a `DATA_LOSS` error
    /// (``LongLinkError/Code-swift.struct/init(status:)`` with ``StatusCode/dataLoss``) when the
    /// file is not a database or fails its check; ``LongLinkError/Code-swift.struct/unavailable``
    /// when the directory or file cannot be made or opened. Each message names the path.
    public convenience init(directory: String, configuration: DurableStoreConfiguration = .init()) throws(LongLinkError)
    {
        try self.init(engine: DurableEngine(directory: directory, configuration: configuration), directory: directory)
    }

    init(engine: DurableEngine, directory: String) {
        self.engine = engine
        self.directory = directory
        self.configuration = engine.configuration
    }

    /// The database file, `longlink.sqlite` in ``directory``.
    public var path: String { engine.path }

    /// The store's counters now.
    public var statistics: DurableStoreStatistics {
        engine.statistics.withLock { $0 }
    }

    /// Finishes the writes queued, closes the file and releases the directory; later operations
    /// throw ``LongLinkError/Code-swift.struct/shutdown``. Returns once another store may open the
    /// directory. Safe to call more than once.
    public func close() async {
        observers.removeAll()
        await engine.close()
    }

    /// Closes the store (``close()``): called by the server that owns it when its
    /// ``LongLinkServer/run()`` returns.
    public func shutdown() async {
        await close()
    }
}
