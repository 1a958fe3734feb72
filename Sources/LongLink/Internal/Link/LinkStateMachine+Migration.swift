internal import LongLinkWire

/// Live migration, make before break: a successor logs in beside the current link, then takes the
/// new requests while the old one retires, answering what was written on it before the client
/// closes it with `GoAway`. The successor and the retiring links are this machine's as the current
/// link is, so that each event of any link goes through one method.
extension LinkStateMachine {
    /// What a link is to the client.
    enum Role: Equatable {
        /// The link requests go on (or will, once logged in).
        case current
        /// A migration's new link, logging in beside the current one.
        case successor
        /// A link replaced by a migration, answering what was written on it before it closes.
        case retiring
    }

    /// What the link of `generation` is, if it is open (or closing) and the client's.
    func role(of generation: UInt64) -> Role? {
        guard let state = records[generation]?.state else { return nil }
        switch state {
        case .successor: return .successor
        case .retiring: return .retiring
        default: return generation == latest ? .current : nil
        }
    }

    /// A migration's new link, logging in beside the current one.
    var successor: UInt64? {
        records.first { $0.value.state == .successor }?.key
    }

    /// The links a migration replaced, answering what was written on them; true once the client
    /// said `GoAway` there.
    var retiring: [UInt64: Bool] {
        records.compactMapValues { record in
            if case .retiring(let saidGoAway) = record.state { saidGoAway } else { nil }
        }
    }

    enum SuccessorAction {
        /// Its login may start; close the successor it replaces, if any.
        case login(replacing: UInt64?)
        /// The client is stopping: close it.
        case refuse(LongLinkError)
    }

    /// A migration's new link of `generation` got its `Welcome`.
    mutating func attachSuccessor(_ generation: UInt64) -> SuccessorAction {
        if let error = admissionError { return .refuse(error) }
        // The successor it replaces is no longer the client's: the core closes it.
        let replaced = successor
        if let replaced { records[replaced] = nil }
        records[generation] = LinkRecord(state: .successor)
        return .login(replacing: replaced)
    }

    enum MigrationAction: Equatable {
        /// The successor is gone, or the client stops: close it if it is open, and keep the
        /// current link.
        case abandon
        /// The successor is the current link now and logged in: send `Sync` and the queue
        /// (``LinkStateMachine/loginSucceeded(_:loggedIn:)`` said so); `retired` answers what was written
        /// on it, then closes.
        case takeOver(retired: UInt64?)
    }

    /// The successor's login succeeded: it takes over from the current link, which retires.
    mutating func completeMigration(_ generation: UInt64) -> MigrationAction {
        guard records[generation]?.state == .successor else { return .abandon }
        guard admissionError == nil else {
            records[generation] = nil
            return .abandon
        }
        var retired: UInt64?
        if let old = self.generation {
            if phase == .closing(old) {
                // Closing already: no longer the client's, its close settles nothing of the new link.
                records[old] = nil
            } else {
                records[old]?.state = .retiring(saidGoAway: false)
                retired = old
            }
        }
        latest = generation
        records[generation]?.state = .loggingIn(synced: false)
        return .takeOver(retired: retired)
    }

    /// Nothing written on the retiring link `generation` waits for a reply: true when the client
    /// now says `GoAway` on it and closes it (once).
    mutating func retiredLinkDrained(_ generation: UInt64) -> Bool {
        guard records[generation]?.state == .retiring(saidGoAway: false) else { return false }
        records[generation]?.state = .retiring(saidGoAway: true)
        return true
    }

    /// The links to close when the client stops: the successor and every retiring link that has
    /// not said `GoAway` yet.
    var sideLinks: [UInt64] {
        (successor.map { [$0] } ?? []) + retiring.filter { !$0.value }.keys.sorted()
    }
}
