internal import LongLinkWire

/// How a link ended, as the supervisor sees it.
enum LinkEnd: Sendable {
    /// The connection dropped, was declared dead, or broke the protocol.
    case closed(LongLinkError?)
    /// The server sent `GoAway` (and then closed, or the client closed after it).
    case goAway(Frame.GoAway)
    /// The client is shutting down.
    case shutdown
    /// A migration replaced the link (it retires, answering what was written on it).
    case migrated

    /// The error a waiter on this link gets.
    var error: LongLinkError {
        switch self {
        case .closed(let error):
            return error ?? LongLinkError(code: .connectionClosed, message: "the server closed the connection")
        case .goAway(let goAway):
            return LongLinkError(
                code: goAway.reconnect ? .unavailable : .goAway,
                message: "server sent GoAway (\(goAway.code)): \(goAway.reason)")
        case .shutdown:
            return LongLinkError(code: .shutdown, message: "the client is shutting down")
        case .migrated:
            return LongLinkError(code: .connectionLost, message: "the link was replaced by a migration")
        }
    }
}

/// Counts of the changes the supervisor looks at while connected (see ``ClientCore/changes``).
struct ChangeCounters: Sendable, Equatable {
    var network = 0
    var list = 0
}

/// Why the supervisor's wait on a link ended.
enum LinkWait: Sendable {
    /// The link ended.
    case ended(LinkEnd)
    /// Time to probe the other endpoints.
    case reprobe
    /// The server reported this load, at which the client leaves it.
    case overloaded(Int)
    /// The server said `GoAway` with reconnect; the link drains what was written on it.
    case goingAway(Frame.GoAway)
}

/// The client's connection machine: the lifecycle of every link it holds (handshake, login gate,
/// `GoAway`, draining, closing), a migration's successor and the retiring links
/// (`+Migration`), shutdown and the terminal error.
///
/// A plain value: each method is an event and returns what the core must do. The core owns the
/// sockets, timers and waiters; this owns the decisions. Links are told apart by their generation,
/// so that late events of a link that is no longer the client's change nothing; ``role(of:)`` says
/// what a link is, and every frame, close and writability change of any link goes through the same
/// core method, which asks it.
struct LinkStateMachine {
    enum Phase: Equatable {
        /// No link.
        case idle
        /// Hello sent, waiting for Welcome.
        case handshaking(UInt64)
        /// Welcome received; the login step runs and the queue waits.
        case loggingIn(UInt64)
        /// Logged in: queued and new requests go out.
        case open(UInt64)
        /// The server sent `GoAway`: requests written before are answered, nothing new goes out.
        case draining(UInt64)
        /// The client is closing it and waits for the transport to confirm.
        case closing(UInt64)
    }

    /// The current link's phase (set here and by a migration's take-over, in `+Migration`).
    var phase = Phase.idle
    /// `Sync` went out on the current link: acknowledgements may follow it.
    var synced = false
    var goAway: Frame.GoAway?
    private(set) var shuttingDown = false
    private(set) var terminalError: LongLinkError?
    /// The generation of the latest current link, also once it ended (how it ended is read there).
    var latest: UInt64?
    /// A migration's new link, logging in beside the current one.
    var successor: UInt64?
    /// Links a migration replaced, answering what was written on them; true once the client said
    /// `GoAway` there.
    var retiring: [UInt64: Bool] = [:]
    /// Links whose gate opened after an app login step completed on them (the current link, a
    /// retiring one), until they close. Requests go out only through an open gate, so each one
    /// written on such a link was written after its login: the server de-duplicates only those.
    private(set) var loggedIn: Set<UInt64> = []

    /// The generation of the last link made, whatever became of it.
    private(set) var lastGeneration: UInt64 = 0

    /// A generation for a new link: never one of an earlier link, so its late events change nothing.
    mutating func newGeneration() -> UInt64 {
        lastGeneration += 1
        return lastGeneration
    }

    /// The generation of the current link, if there is one.
    var generation: UInt64? {
        switch phase {
        case .idle: nil
        case .handshaking(let g), .loggingIn(let g), .open(let g), .draining(let g), .closing(let g): g
        }
    }

    /// True while the link of `generation` has shaken hands and is not going away.
    func isEstablished(_ generation: UInt64) -> Bool {
        phase == .loggingIn(generation) || phase == .open(generation)
    }

    var isStopping: Bool { shuttingDown || terminalError != nil }

    /// Why a request cannot be accepted at all now, if it cannot.
    var admissionError: LongLinkError? {
        if let terminalError { return terminalError }
        if shuttingDown { return LongLinkError(code: .shutdown, message: "the client is shutting down") }
        return nil
    }

    /// Where a new request goes: on the link, into the offline queue, or back to its caller.
    /// Login requests (`bypassesGate`) go only on their own link, while it logs in.
    func route(bypassesGate: Bool, generation requested: UInt64) -> RequestRoute {
        if bypassesGate, successor == requested, admissionError == nil {
            // The login of a migration's new link.
            return .write(generation: requested)
        }
        if bypassesGate {
            guard isEstablished(requested) else {
                return .refuse(LongLinkError(code: .connectionLost, message: "the link dropped during login"))
            }
            return .write(generation: requested)
        }
        if case .open(let generation) = phase { return .write(generation: generation) }
        return .queue
    }

    // MARK: Events

    enum AttachAction {
        /// Its `Hello` went out with the connect: hand its `Welcome` to ``receivedWelcome(_:version:)``.
        case awaitWelcome
        /// A shutdown or terminal error landed while connecting: close the new connection.
        case refuse(LongLinkError)
    }

    /// A new connection of `generation` is up, as the current link.
    mutating func attach(_ generation: UInt64) -> AttachAction {
        if let error = admissionError { return .refuse(error) }
        latest = generation
        phase = .handshaking(generation)
        synced = false
        goAway = nil
        return .awaitWelcome
    }

    enum WelcomeAction: Equatable {
        /// Resume the handshake's waiter: login may start.
        case completeHandshake
        /// Not the current link, or not its first frame: nothing to do.
        case none
        case violation(String)
    }

    mutating func receivedWelcome(_ generation: UInt64, version: UInt32) -> WelcomeAction {
        guard phase == .handshaking(generation) else { return .none }
        guard version == Frame.protocolVersion else {
            return .violation("the server speaks protocol version \(version)")
        }
        phase = .loggingIn(generation)
        return .completeHandshake
    }

    enum LoginAction: Equatable {
        case none
        /// Send `Sync` and the acknowledgements that waited; then the queue when `openQueue`.
        case sync(openQueue: Bool)
    }

    /// The login step and the subscriptions succeeded on `generation`; `loggedIn` when the session
    /// has a login step (it ran to completion here), false when it has none: a server binds a
    /// principal only in a login, and de-duplicates nothing written before one.
    mutating func loginSucceeded(_ generation: UInt64, loggedIn: Bool) -> LoginAction {
        guard isEstablished(generation) else { return .none }
        if loggedIn { self.loggedIn.insert(generation) }
        synced = true
        guard !shuttingDown else { return .sync(openQueue: false) }
        phase = .open(generation)
        return .sync(openQueue: true)
    }

    enum GoAwayAction {
        /// Fail the handshake's waiter with this error and close.
        case failHandshakeAndClose(LongLinkError)
        /// Nothing written waits for a reply: close now.
        case close
        /// Written requests wait: the server answers them before it closes.
        case waitForReplies
        case none
    }

    /// The server of `generation` said `GoAway`. On a successor or a retiring link it only leaves:
    /// what was written there is answered, or resent by the close.
    mutating func receivedGoAway(_ generation: UInt64, _ frame: Frame.GoAway, hasWrittenRequests: Bool)
        -> GoAwayAction
    {
        if let role = role(of: generation), role != .current {
            return hasWrittenRequests ? .waitForReplies : .close
        }
        guard self.generation == generation, phase != .closing(generation) else { return .none }
        goAway = frame
        if phase == .handshaking(generation) {
            phase = .closing(generation)
            return .failHandshakeAndClose(LinkEnd.goAway(frame).error)
        }
        if hasWrittenRequests {
            phase = .draining(generation)
            return .waitForReplies
        }
        phase = .closing(generation)
        return .close
    }

    /// The last request written before the server's `GoAway` has ended (answered, timed out or
    /// given up): true when the client must now close the draining link itself, since a server
    /// that never closes would otherwise hold it, gate shut, forever.
    mutating func drained(_ generation: UInt64) -> Bool {
        guard phase == .draining(generation) else { return false }
        phase = .closing(generation)
        return true
    }

    /// The client decided to close the link (dead, broke the protocol, login failed); false when it
    /// is not the client's or is closing already.
    mutating func closeRequested(_ generation: UInt64) -> Bool {
        if let role = role(of: generation), role != .current { return true }
        guard self.generation == generation, phase != .closing(generation) else { return false }
        phase = .closing(generation)
        return true
    }

    struct ClosedAction {
        /// What the link was.
        var role: Role
        var end: LinkEnd
        /// Written requests may go out again on the current (or next) link.
        var resendAllowed: Bool
        /// The link had logged in before anything but its login went out on it (see
        /// ``LinkStateMachine/loginSucceeded(_:loggedIn:)``): only then may its server answer a
        /// copy from its de-dup window instead of running it again.
        var loggedIn: Bool
    }

    /// The transport closed the link of `generation`; nil when it is not the client's.
    mutating func closed(_ generation: UInt64, error: LongLinkError?) -> ClosedAction? {
        if successor == generation || retiring[generation] != nil {
            let role: Role = successor == generation ? .successor : .retiring
            if role == .successor { successor = nil } else { retiring[generation] = nil }
            return ClosedAction(
                role: role, end: .closed(error), resendAllowed: !isStopping,
                loggedIn: loggedIn.remove(generation) != nil)
        }
        guard self.generation == generation else { return nil }
        let end: LinkEnd
        if shuttingDown {
            end = .shutdown
        } else if let goAway {
            end = .goAway(goAway)
        } else {
            end = .closed(error)
        }
        phase = .idle
        synced = false
        return ClosedAction(
            role: .current, end: end, resendAllowed: !isStopping, loggedIn: loggedIn.remove(generation) != nil)
    }

    enum ShutdownAction: Equatable {
        case none
        /// Fail what is not written yet, then give written requests the grace period.
        case failUnwrittenAndWait
    }

    mutating func beginShutdown() -> ShutdownAction {
        guard !shuttingDown else { return .none }
        shuttingDown = true
        return .failUnwrittenAndWait
    }

    enum CloseAction: Equatable {
        case none
        /// Send the waiting acks (when synced), `GoAway`, and close gracefully.
        case sayGoAwayAndClose(flushAcks: Bool)
        /// Close without a word (no Welcome yet, or the server said GoAway already).
        case close
    }

    /// The grace period ended, or nothing was pending any more.
    mutating func completeShutdown() -> CloseAction {
        guard let generation, phase != .closing(generation) else { return .none }
        let welcomed = phase != .handshaking(generation)
        let flush = synced
        phase = .closing(generation)
        return welcomed ? .sayGoAwayAndClose(flushAcks: flush) : .close
    }

    /// Ends everything with `error`; false when a terminal error was recorded already. When true,
    /// the core fails every request and ends every consumer; it closes the link when
    /// ``closeRequested(_:)`` agrees.
    mutating func terminate(_ error: LongLinkError) -> Bool {
        guard terminalError == nil else { return false }
        terminalError = error
        return true
    }

    /// A new session begins after one ended for good (the app logged in again): requests are
    /// admitted again. False while shutting down or when no session ended.
    mutating func reopen() -> Bool {
        guard terminalError != nil, !shuttingDown else { return false }
        terminalError = nil
        return true
    }
}
