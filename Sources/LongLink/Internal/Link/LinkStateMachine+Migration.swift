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
        if self.generation == generation { return .current }
        if successor == generation { return .successor }
        if retiring[generation] != nil { return .retiring }
        return nil
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
        let replaced = successor
        successor = generation
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
        guard successor == generation else { return .abandon }
        successor = nil
        guard admissionError == nil else { return .abandon }
        var retired: UInt64?
        if let old = self.generation, phase != .closing(old) {
            retiring[old] = false
            retired = old
        }
        latest = generation
        phase = .loggingIn(generation)
        synced = false
        goAway = nil
        return .takeOver(retired: retired)
    }

    /// Nothing written on the retiring link `generation` waits for a reply: true when the client
    /// now says `GoAway` on it and closes it (once).
    mutating func retiredLinkDrained(_ generation: UInt64) -> Bool {
        guard retiring[generation] == false else { return false }
        retiring[generation] = true
        return true
    }

    /// The links to close when the client stops: the successor and every retiring link that has
    /// not said `GoAway` yet.
    var sideLinks: [UInt64] {
        (successor.map { [$0] } ?? []) + retiring.filter { !$0.value }.keys.sorted()
    }
}
