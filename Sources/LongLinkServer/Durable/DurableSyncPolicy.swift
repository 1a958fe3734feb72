/// When a ``DurableStore`` forces its writes to the disk (`fsync`), and so what a crash can take.
///
/// Every policy keeps everything committed across a crash of the **process** (`kill -9`, a fault):
/// a commit has been handed to the operating system, which writes it out. They differ in what a
/// crash of the **machine** (power loss, kernel panic, a VM stopped) can take: what the operating
/// system had not written to the disk yet.
///
/// A producer's call returns only once its push is committed, so "a commit" below is "a push whose
/// `push(to:topic:payload:)` returned" (likewise a stored reply, an acknowledgement).
public struct DurableSyncPolicy: Sendable, Hashable, CustomStringConvertible {
    enum Wrapped: Sendable, Hashable {
        case everyCommit
        case interval(Duration)
        case never
    }

    let wrapped: Wrapped

    /// Every commit is on the disk before the calls it answers return (SQLite `synchronous=FULL`:
    /// the write-ahead log is synced at each commit). A machine crash loses nothing that was
    /// answered. The default. Writes still share commits: every write that arrives during one
    /// commit's `fsync` goes into the next one, so the rate is bounded by the disk's syncs per
    /// second times the batch, not by one sync per push.
    public static let everyCommit = DurableSyncPolicy(wrapped: .everyCommit)

    /// The write-ahead log is synced at most `interval` after a commit (SQLite `synchronous=NORMAL`
    /// and a checkpoint every `interval` while there are writes). A machine crash loses at most the
    /// commits of the last `interval` (SQLite's log checksums find where a torn write begins: the
    /// store opens at the last whole commit before it); a process crash loses nothing.
    public static func interval(_ interval: Duration) -> DurableSyncPolicy {
        DurableSyncPolicy(wrapped: .interval(max(interval, .milliseconds(1))))
    }

    /// Never synced by the store (SQLite `synchronous=OFF`): the operating system writes when it
    /// chooses. A process crash loses nothing once committed; a machine crash may lose anything not
    /// yet written out, and may leave the file inconsistent: the store then refuses to open it
    /// (`quick_check` fails) with an error naming it, rather than start empty.
    public static let never = DurableSyncPolicy(wrapped: .never)

    /// `everyCommit`, `interval(<duration>)` or `never`.
    public var description: String {
        switch wrapped {
        case .everyCommit: "everyCommit"
        case .interval(let interval): "interval(\(interval))"
        case .never: "never"
        }
    }

    /// SQLite's `synchronous` setting for the policy.
    var synchronousPragma: String {
        switch wrapped {
        case .everyCommit: "FULL"
        case .interval: "NORMAL"
        case .never: "OFF"
        }
    }

    /// How long after a commit the store checkpoints (which syncs the log); nil: never on a timer.
    var checkpointInterval: Duration? {
        if case .interval(let interval) = wrapped { return interval }
        return nil
    }
}
