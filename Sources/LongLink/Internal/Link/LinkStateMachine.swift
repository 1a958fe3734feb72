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
/// so that late events of a link that is no longer the client's change nothing; each has one
/// ``LinkState`` whose cases carry what that phase needs (the server's `GoAway` only while
/// draining or closing after it, `Sync` only once logged in), so that no flag outlives its phase.
/// ``role(of:)`` says what a link is, and every frame, close and writability change of any link
/// goes through the same core method, which asks it.
struct LinkStateMachine {
    /// The current link's phase, as the core reads it.
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

    /// Where one link is in its life, with what that phase needs.
    enum LinkState: Equatable {
        /// The current link: `Hello` sent, waiting for `Welcome`.
        case handshaking
        /// The current link, welcomed: the login step runs and the queue waits. `synced`: the
        /// login completed while a shutdown began, so `Sync` went out and the queue stays shut.
        case loggingIn(synced: Bool)
        /// The current link, logged in (`Sync` went out): queued and new requests go out.
        case open
        /// The current link after the server's `GoAway`: what was written before is answered.
        case draining(Frame.GoAway, synced: Bool)
        /// The current link, which the client closes; `goAway`: the server's, if it said one;
        /// `welcomed`: its `Welcome` came before (otherwise a frame may still be its first).
        case closing(goAway: Frame.GoAway?, synced: Bool, welcomed: Bool)
        /// A migration's new link, logging in beside the current one.
        case successor
        /// A link a migration replaced, answering what was written on it; `saidGoAway` once the
        /// client told it `GoAway`.
        case retiring(saidGoAway: Bool)

        /// A phase of the current link.
        var isCurrent: Bool {
            switch self {
            case .handshaking, .loggingIn, .open, .draining, .closing: true
            case .successor, .retiring: false
            }
        }

        /// `Sync` went out on it (the current link's phases).
        var synced: Bool {
            switch self {
            case .open: true
            case .loggingIn(let synced), .draining(_, let synced), .closing(_, let synced, _): synced
            case .handshaking, .successor, .retiring: false
            }
        }

        /// The server's `GoAway`, while the current link drains or closes after it.
        var goAway: Frame.GoAway? {
            switch self {
            case .draining(let goAway, _): goAway
            case .closing(let goAway, _, _): goAway
            default: nil
            }
        }
    }

    /// One link the client holds.
    struct LinkRecord: Equatable {
        var state: LinkState
        /// Its gate opened after an app login step completed on it (the current link, or a
        /// retiring one). Requests go out only through an open gate, so each one written on such a
        /// link was written after its login: the server de-duplicates only those.
        var loggedIn = false
        /// Its heartbeat: whether it needs a `Ping` or is dead (ticked while it is the current link).
        var heartbeat = HeartbeatMonitor()
    }

    /// Every link the client holds, by generation: the current one until it closes, a
    /// migration's successor, the retiring links. Changed only by this machine (`+Migration` too).
    var records: [UInt64: LinkRecord] = [:]
    /// The generation of the latest current link, also once it ended (how it ended is read there).
    var latest: UInt64?
    private(set) var shuttingDown = false
    private(set) var terminalError: LongLinkError?

    /// The generation of the last link made, whatever became of it.
    private(set) var lastGeneration: UInt64 = 0

    /// A generation for a new link: never one of an earlier link, so its late events change nothing.
    mutating func newGeneration() -> UInt64 {
        lastGeneration += 1
        return lastGeneration
    }

    /// The current link's generation and state, until it closes.
    private var current: (generation: UInt64, state: LinkState)? {
        guard let latest, let record = records[latest], record.state.isCurrent else { return nil }
        return (latest, record.state)
    }

    /// The current link's phase.
    var phase: Phase {
        guard let (generation, state) = current else { return .idle }
        switch state {
        case .handshaking: return .handshaking(generation)
        case .loggingIn: return .loggingIn(generation)
        case .open: return .open(generation)
        case .draining: return .draining(generation)
        case .closing: return .closing(generation)
        case .successor, .retiring: return .idle
        }
    }

    /// `Sync` went out on the current link: acknowledgements may follow it.
    var synced: Bool { current?.state.synced ?? false }
    /// The `GoAway` the current link's server said, while it drains or closes after it.
    var goAway: Frame.GoAway? { current?.state.goAway }
    /// The generations of the links whose gate opened after a login (see ``LinkRecord/loggedIn``).
    var loggedIn: Set<UInt64> { Set(records.filter(\.value.loggedIn).keys) }

    /// The generation of the current link, if there is one.
    var generation: UInt64? { current?.generation }

    /// Moves the current link of `generation` to `state`.
    private mutating func set(_ generation: UInt64, _ state: LinkState) {
        records[generation]?.state = state
    }

    /// True while the first frame of the link of `generation` is still to come: its `Welcome`
    /// (the current link only: a successor is handed over welcomed).
    func awaitsWelcome(_ generation: UInt64) -> Bool {
        switch records[generation]?.state {
        case .handshaking, .closing(_, _, welcomed: false): true
        default: false
        }
    }

    /// A heartbeat tick of the current link of `generation`, told whether anything was received and
    /// sent since the last: nothing, a `Ping` (once welcomed: before, the handshake's own timeout
    /// runs), or the link is dead. Nil when it is not the current link.
    mutating func heartbeatTick(_ generation: UInt64, received: Bool, sent: Bool) -> HeartbeatMonitor.TickAction? {
        guard generation == self.generation, var record = records[generation] else { return nil }
        let action = record.heartbeat.tick(receivedSinceLastTick: received, sentSinceLastTick: sent)
        records[generation] = record
        if action == .sendPing, awaitsWelcome(generation) { return HeartbeatMonitor.TickAction.none }
        return action
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
        // A current link not closed yet is no longer the client's: its late events change nothing.
        if let old = self.generation { records[old] = nil }
        latest = generation
        records[generation] = LinkRecord(state: .handshaking)
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
        set(generation, .loggingIn(synced: false))
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
        if loggedIn { records[generation]?.loggedIn = true }
        // The gate opens once: its `Sync` went already.
        guard phase != .open(generation), records[generation]?.state != .loggingIn(synced: true) else { return .none }
        guard !shuttingDown else {
            if phase == .loggingIn(generation) { set(generation, .loggingIn(synced: true)) }
            return .sync(openQueue: false)
        }
        set(generation, .open)
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
        if phase == .handshaking(generation) {
            set(generation, .closing(goAway: frame, synced: false, welcomed: false))
            return .failHandshakeAndClose(LinkEnd.goAway(frame).error)
        }
        if hasWrittenRequests {
            set(generation, .draining(frame, synced: synced))
            return .waitForReplies
        }
        set(generation, .closing(goAway: frame, synced: synced, welcomed: true))
        return .close
    }

    /// The last request written before the server's `GoAway` has ended (answered, timed out or
    /// given up): true when the client must now close the draining link itself, since a server
    /// that never closes would otherwise hold it, gate shut, forever.
    mutating func drained(_ generation: UInt64) -> Bool {
        guard phase == .draining(generation) else { return false }
        set(generation, .closing(goAway: goAway, synced: synced, welcomed: true))
        return true
    }

    /// The client decided to close the link (dead, broke the protocol, login failed); false when it
    /// is not the client's or is closing already.
    mutating func closeRequested(_ generation: UInt64) -> Bool {
        if let role = role(of: generation), role != .current { return true }
        guard self.generation == generation, phase != .closing(generation) else { return false }
        set(generation, .closing(goAway: goAway, synced: synced, welcomed: phase != .handshaking(generation)))
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
        guard let role = role(of: generation), let record = records.removeValue(forKey: generation) else {
            return nil
        }
        guard role == .current else {
            return ClosedAction(role: role, end: .closed(error), resendAllowed: !isStopping, loggedIn: record.loggedIn)
        }
        let end: LinkEnd
        if shuttingDown {
            end = .shutdown
        } else if let goAway = record.state.goAway {
            end = .goAway(goAway)
        } else {
            end = .closed(error)
        }
        return ClosedAction(role: .current, end: end, resendAllowed: !isStopping, loggedIn: record.loggedIn)
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
        set(generation, .closing(goAway: goAway, synced: flush, welcomed: welcomed))
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
