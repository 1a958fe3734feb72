internal import LongLinkWire

/// This server's sessions as the fleet's presence must show them, and what of that is still to be
/// written: a pure state machine that ``PresenceKeeper`` drives.
///
/// Writes go one batch at a time (``nextBatch()`` until it returns nil), so that a batch never
/// overtakes an earlier one: a renewal taken before a session ended is written before that
/// session's removal, and never brings it back. Bounded by the server's sessions: ``live`` holds
/// one entry per bound connection, the pending sets at most one per connection and principal
/// (a connection's sessions ended since the last batch).
struct PresenceLedger {
    /// A connection bound to a principal, the principal compared by its bytes.
    struct Entry: Hashable {
        let principal: PrincipalKey
        let connectionID: UInt64

        var session: PresenceUpdate.Session {
            PresenceUpdate.Session(principal: principal.name, connectionID: connectionID)
        }
    }

    /// What to write next.
    struct Batch: Equatable {
        var present: [Entry]
        var absent: [Entry]
    }

    /// The sessions open now.
    private(set) var live: Set<Entry> = []
    /// Began since the last batch was taken.
    private var added: Set<Entry> = []
    /// Ended since the last batch was taken.
    private var removed: Set<Entry> = []
    private var renewalDue = false
    /// A batch is being written: the next waits for it.
    private var writing = false
    /// Crashed or stopped: nothing more is written.
    private var halted = false

    /// A session began; true when a write should start now.
    mutating func began(_ entry: Entry) -> Bool {
        guard !halted else { return false }
        live.insert(entry)
        // Ended and began again before its removal went out: it stays, renewed.
        removed.remove(entry)
        added.insert(entry)
        return startWriting()
    }

    /// A session ended; true when a write should start now.
    mutating func ended(_ entry: Entry) -> Bool {
        guard !halted, live.remove(entry) != nil else { return false }
        // Removed even when its addition never went out: an earlier batch may have written it
        // (before it ended and began again), and removing a session the store lacks costs nothing.
        added.remove(entry)
        removed.insert(entry)
        return startWriting()
    }

    /// Every live session is due for renewal; true when a write should start now.
    mutating func renew() -> Bool {
        guard !halted, !live.isEmpty else { return false }
        renewalDue = true
        return startWriting()
    }

    /// The next batch to write, taken from what is pending; nil when nothing is (the writer then
    /// stops, and the next change starts it again).
    mutating func nextBatch() -> Batch? {
        guard !halted, renewalDue || !added.isEmpty || !removed.isEmpty else {
            writing = false
            return nil
        }
        let batch = Batch(present: Array(renewalDue ? live : added), absent: Array(removed))
        added.removeAll()
        removed.removeAll()
        renewalDue = false
        writing = true
        return batch
    }

    /// Writes nothing more, as a crash would: what is pending is dropped, and the sessions written
    /// stay in the store until their lease passes.
    mutating func halt() {
        halted = true
        added.removeAll()
        removed.removeAll()
        renewalDue = false
    }

    private mutating func startWriting() -> Bool {
        guard !writing else { return false }
        writing = true
        return true
    }
}
