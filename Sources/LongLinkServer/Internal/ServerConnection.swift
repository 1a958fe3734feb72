internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// One client connection on the server: it performs what its session's state machine decides.
///
/// ``ServerSessionStateMachine`` holds the session's bookkeeping (phase, requests in flight,
/// heartbeat, principal); this class feeds it the events (frames decoded from the socket, timers,
/// handlers finishing, calls from the server) and performs the actions it returns: socket writes,
/// handler tasks, timers, and the stores every connection shares (``ServerCore``). Requests are
/// in `ServerConnection+Requests.swift`, pushes in `ServerConnection+Pushes.swift`.
///
/// Every mutable property is confined to the connection's event loop; methods other threads call
/// (``deliver(requestID:token:response:)``, ``requestPush()``, ``bind(principal:)``,
/// ``sendBestEffort(topic:payload:for:)``, ``goAway(code:reason:reconnect:retryAfter:)``) hop onto it
/// first.
final class ServerConnection: ConnectionHandler, @unchecked Sendable {
    /// What the connection keeps for a request whose handler it started.
    struct Execution: Sendable {
        /// The handler's task; nil for a synchronous handler, which runs inline.
        var task: Task<Void, Never>?
        /// The request's deadline on the server, from its `timeout_ms`.
        var timer: EventLoopTimer?
        /// The execution in the de-duplication window, when de-duplication is on.
        var run: DedupeRun?
        /// The key the request was admitted under: a login binding the connection meanwhile
        /// changes the key new requests get, not this one's.
        var dedupeKey: DedupeKey?
    }

    typealias Session = ServerSessionStateMachine<Execution>

    let connection: Connection
    let core: ServerCore
    var loop: EventLoop { connection.eventLoop }
    var configuration: ServerConfiguration { core.configuration }

    var session: Session
    /// The subject and key pin of the client's TLS certificate, when it presented one.
    let peerCertificate: (subject: String, pin: String)?
    /// The client's part of every de-duplication key, made at `Hello`.
    var dedupeClient = DedupeKey.Client("")
    /// When the session was bound to its principal, or last bound to it exclusively: a fleet's
    /// session record ends only sessions bound before the record was written.
    var boundAt: ContinuousClock.Instant?
    /// Both sides agreed to compress payloads (at `Hello`).
    var compresses = false
    var pushWindow: ReliablePushWindow
    /// Which acknowledged seqs go to the push store, one call at a time (see ``AckMerger``).
    var acks = AckMerger()
    /// Armed while the push window is full (see ``armWindowTimer()``).
    var windowTimer: (any ScheduledWork)?
    /// A push pump is queued on the loop already: ``requestPush()`` coalesces.
    let pushRequested = Atomic<Bool>(false)
    /// The socket has closed (read from any thread: ``RequestContext/isConnectionOpen``).
    private let closed = Atomic<Bool>(false)
    var isClosed: Bool { closed.load(ordering: .acquiring) }
    /// Reads of the push store (see `ServerConnection+PushStore.swift`).
    var pushReads = PushReads()
    /// When a `Sync` replays the unacknowledged pushes (see ``SyncGate``).
    var syncGate: SyncGate
    /// Armed while a coalesced `Sync` waits for its replay (see ``handleSync()``).
    var syncTimer: (any ScheduledWork)?

    private var decoder: FrameDecoder
    /// Frames decoded and not yet handled (they wait while the socket is not writable).
    private var frames: [Frame] = []
    private var readingPaused = false
    /// The handshake, heartbeat and drain timers run on the server's clock
    /// (``ServerConfiguration/clock``), so that tests drive them with a manual one.
    private var handshakeTimer: (any ScheduledWork)?
    private var heartbeatTimer: (any ScheduledWork)?
    private var drainTimer: (any ScheduledWork)?
    /// Ends the session when its credential expires (see `ServerConnection+Credentials.swift`).
    var expiryTimer: (any ScheduledWork)?
    /// When the session's credential expires, shared with the handlers' threads.
    let credentials = Locked(CredentialState())
    private var partialFrame = PartialFrameWatch()
    private var partialFrameTimer: EventLoopTimer?

    init(connection: Connection, core: ServerCore) {
        self.connection = connection
        self.core = core
        self.session = Session(configuration: Session.Configuration(core.configuration))
        self.peerCertificate = connection.tlsPeerCertificate.map { ($0.subject, $0.pin.description) }
        self.pushWindow = ReliablePushWindow(size: core.configuration.reliablePushWindow)
        self.syncGate = SyncGate(interval: core.configuration.syncReplayInterval)
        self.decoder = FrameDecoder(
            maxFrameBytes: core.configuration.maxFrameBytes,
            limits: Frame.DecodingLimits(
                maxMapEntries: core.configuration.maxMetadataEntries, maxMapBytes: core.configuration.maxMetadataBytes,
                maxRepeatedValues: core.configuration.maxAckSeqs))
    }

    /// Runs `body` on the loop: at once when called there, so that what a handler running inline
    /// does (a binding, a reply) happens before the next frame is handled.
    func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    /// Runs `work` on the loop `delay` from now by the server's clock.
    func schedule(after delay: Duration, _ work: @escaping @Sendable () -> Void) -> any ScheduledWork {
        core.clock.schedule(at: core.clock.now.advanced(by: delay), on: loop, work)
    }

    func send(_ frame: Frame) {
        connection.write(encoding: { frame.encodeDelimited(into: &$0) })
    }

    // MARK: Lifecycle

    func start() {
        connection.start(handler: self)
        handshakeTimer = schedule(after: configuration.handshakeTimeout) { [self] in
            if let close = session.handshakeTimedOut() { perform(close) }
        }
    }

    /// Turns the connection away at the connection limit.
    func reject() {
        perform(session.rejectedAtConnectionLimit())
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard session.phase != .closed else { return }
        session.receivedBytes()
        var failure: WireFormatError?
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            failure = error
        }
        // The frames before the malformed bytes are handled first, as they arrived first.
        processFrames()
        guard let failure else {
            if partialFrame.read(pendingBytes: decoder.bufferedByteCount, consumed: decoder.consumedByteCount) {
                armPartialFrameTimer()
            }
            return
        }
        let close =
            switch failure.kind {
            case .frameTooLarge:
                session.receivedMalformedBytes(code: .resourceExhausted, reason: "frame too large: \(failure)")
            case .tooManyElements:
                session.receivedMalformedBytes(code: .resourceExhausted, reason: "too many elements: \(failure)")
            default:
                session.receivedMalformedBytes(code: .invalidArgument, reason: "malformed frame: \(failure)")
            }
        if let close { perform(close) }
    }

    /// Handles decoded frames in order. When the connection stops being writable (a client that
    /// does not read its replies), the rest waits and the socket is no longer read, so server
    /// memory stays bounded by the write buffer's high watermark plus the replies of the requests
    /// already in flight.
    private func processFrames() {
        var index = 0
        while index < frames.count, session.phase != .closed {
            handle(frames[index])
            index += 1
            if !connection.isWritable { break }
        }
        frames.removeFirst(index)
        if session.phase != .closed, !readingPaused, !connection.isWritable {
            readingPaused = true
            core.counters.readPauses.increment()
            connection.pauseReading()
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        guard connection.isWritable, session.phase != .closed else { return }
        processFrames()
        if readingPaused, connection.isWritable {
            readingPaused = false
            connection.resumeReading()
        }
        pumpReliablePushes()
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        // Before the app hears of it: see ``RequestContext/isConnectionOpen``.
        closed.store(true, ordering: .releasing)
        let principal = session.principal
        let abandoned = session.connectionClosed()
        cancelTimers()
        release(abandoned[...], shuttingDown: core.isShuttingDown)
        let reason = error.map { SessionEndReason.connectionLost($0.message) } ?? .closedByClient
        core.unregister(self, principal: principal, reason: reason)
        configuration.connectionClosed?(connection.id)
    }

    private func armPartialFrameTimer() {
        let timeout = configuration.partialFrameTimeout
        partialFrameTimer = loop.scheduleTimer(after: timeout) { [self] in
            partialFrameTimer = nil
            guard session.phase != .closed else { return }
            switch partialFrame.fired(
                pendingBytes: decoder.bufferedByteCount, consumed: decoder.consumedByteCount,
                readingPaused: readingPaused)
            {
            case .none: break
            case .rearm: armPartialFrameTimer()
            case .close: if let close = session.partialFrameTimedOut(after: timeout) { perform(close) }
            }
        }
    }

    private func cancelTimers() {
        for timer in [
            handshakeTimer, heartbeatTimer, drainTimer, windowTimer, syncTimer, pushReads.retryTimer, expiryTimer,
        ]
            .compactMap({ $0 })
        {
            timer.cancel()
        }
        if let partialFrameTimer { loop.cancelTimer(partialFrameTimer) }
        partialFrameTimer = nil
        handshakeTimer = nil
        heartbeatTimer = nil
        drainTimer = nil
        expiryTimer = nil
        windowTimer = nil
        syncTimer = nil
        pushReads.retryTimer = nil
    }

    // MARK: Frames

    private func handle(_ frame: Frame) {
        switch frame {
        case .hello(let hello): handleHello(hello)
        case .request(let request): handleRequest(request)
        case .cancel(let cancel): handleCancel(cancel.requestID)
        case .ack(let ack): handleAck(ack)
        case .sync: handleSync()
        case .ping(let ping):
            switch session.receivedPing(proposedHeartbeat: ping.heartbeatMilliseconds) {
            case .sendPong(let heartbeat):
                send(
                    .pong(
                        Frame.Pong(
                            nonce: ping.nonce, loadPermille: core.loadPermille,
                            heartbeatMilliseconds: heartbeat?.wireMilliseconds ?? 0)))
                if heartbeat != nil {
                    // The idle timeout follows the interval now in force.
                    heartbeatTimer?.cancel()
                    scheduleHeartbeatTick()
                }
            case .closeConnection(let close): perform(close)
            case .ignore: break
            }
        case .goAway:
            if let close = session.receivedGoAway() { perform(close) } else { leavePrincipal(.closedByClient) }
        case .unrecognized:
            // An empty frame, or a kind this server does not know: ignored in every phase, before
            // Hello too (it is not "a first frame other than Hello").
            break
        case .pong:
            if let close = session.receivedIgnorableFrame() { perform(close) }
        case .welcome, .response, .push:
            if let close = session.receivedServerFrame() { perform(close) }
        }
    }

    private func handleHello(_ hello: Frame.Hello) {
        switch session.receivedHello(hello) {
        case .sendWelcome(let heartbeat):
            dedupeClient = DedupeKey.Client(session.clientID)
            var welcome = Frame.Welcome(
                serverID: configuration.serverID, heartbeatMilliseconds: heartbeat.wireMilliseconds,
                maxFrameBytes: UInt32(configuration.maxFrameBytes), loadPermille: core.loadPermille,
                dedupeWindowMilliseconds: configuration.dedupeWindow.wireMilliseconds,
                maxInFlight: UInt32(clamping: configuration.maxInFlightPerConnection))
            negotiateCompression(hello, welcome: &welcome)
            send(.welcome(welcome))
            handshakeTimer?.cancel()
            handshakeTimer = nil
            scheduleHeartbeatTick()
        case .closeConnection(let close):
            perform(close)
        case .ignore:
            break
        }
    }

    // MARK: Going away

    /// Sends `GoAway`, answers what is in flight (bounded by the drain timeout), then closes (any thread).
    func goAway(code: StatusCode, reason: String, reconnect: Bool, retryAfter: Duration) {
        let goAway = Frame.GoAway(
            code: code, reason: reason, reconnect: reconnect, retryAfterMilliseconds: retryAfter.wireMilliseconds)
        onLoop { [self] in
            switch session.goAwayRequested(goAway) {
            case .sendGoAwayAndDrain(let goAway):
                leavePrincipal(.goAway(code: goAway.code, reason: goAway.reason))
                send(.goAway(goAway))
                drainTimer = schedule(after: configuration.drainTimeout) { [self] in
                    if let close = session.drainTimedOut() { perform(close) }
                }
            case .closeConnection(let close):
                perform(close)
            case .ignore:
                break
            }
        }
    }

    /// Closes without waiting (any thread); the requests in flight are let go when the socket
    /// reports the close.
    func forceClose(mode: CloseMode = .immediately) {
        connection.close(mode, error: LongLinkError(code: .shutdown, message: "server shut down"))
    }

    /// Performs a close the session decided: counts it, sends its `GoAway`, lets go of the
    /// requests it hands back, and closes the socket gracefully (queued writes go out first).
    func perform(_ close: Session.Close) {
        switch close.reason {
        case .protocolViolation: core.counters.protocolViolations.increment()
        case .idle, .slowFrame: core.counters.idleClosures.increment()
        case .unsupportedVersion, .connectionLimit, .drained, .drainTimedOut: break
        }
        // Drained without a GoAway of ours: the client said it was leaving.
        leavePrincipal(
            close.goAway.map { .goAway(code: $0.code, reason: $0.reason) }
                ?? (close.reason == .drained ? .closedByClient : .connectionLost("\(close.reason)")))
        if let goAway = close.goAway { send(.goAway(goAway)) }
        cancelTimers()
        release(close.inFlight[...], shuttingDown: core.isShuttingDown)
        connection.close(.graceful)
    }

    /// The session is draining or closed: it leaves its principal's connections now, not when
    /// its socket closes (a graceful close lingers until the peer closes, up to its timeout).
    private func leavePrincipal(_ reason: SessionEndReason) {
        if let principal = session.principal { core.detach(self, principal: principal, reason: reason) }
    }

    /// How many requests of a closed session ``release(_:shuttingDown:)`` lets go of per loop
    /// turn: each costs a timer and a task to cancel, and a connection with many in flight must
    /// not keep the loop's other connections waiting.
    static let releasedPerTurn = 1_024

    /// Lets go of the requests a closed session had in flight, in slices of ``releasedPerTurn``
    /// with the loop's sockets served in between (the next slice waits for the next turn, as a
    /// due timer does). The session no longer knows them, so a timer or a handler finishing in the
    /// meantime finds nothing to answer. All at once when the server shuts down: nobody waits
    /// then, and the loop may stop before a later turn.
    private func release(_ abandoned: ArraySlice<Session.InFlightRequest>, shuttingDown: Bool) {
        guard !abandoned.isEmpty else { return }
        let end =
            shuttingDown ? abandoned.endIndex : min(abandoned.endIndex, abandoned.startIndex + Self.releasedPerTurn)
        for request in abandoned[..<end] {
            let execution = request.execution
            if core.dedupeEnabled, !shuttingDown, let task = execution?.task, let run = execution?.run {
                // The execution goes on as an orphan, within bounds and until its deadline (its
                // timer stays armed): its result is stored so that the client's resend after
                // reconnecting is answered without running the handler twice.
                stopWaiting(for: request)
                core.adoptOrphan(
                    run, client: session.clientID, handle: OrphanHandle(task: task, timer: execution?.timer, loop: loop)
                )
                continue
            }
            if let timer = execution?.timer { loop.cancelTimer(timer) }
            if core.dedupeEnabled { stopWaiting(for: request) }
            execution?.task?.cancel()
        }
        guard end < abandoned.endIndex else { return }
        let rest = abandoned[end...]
        loop.scheduleTimer(after: .zero) { [self] in release(rest, shuttingDown: shuttingDown) }
    }

    // MARK: Heartbeat

    private func scheduleHeartbeatTick() {
        heartbeatTimer = schedule(after: session.heartbeat) { [self] in
            switch session.heartbeatTick() {
            case .scheduleNextTick: scheduleHeartbeatTick()
            case .closeConnection(let close): perform(close)
            case .stop: heartbeatTimer = nil
            }
        }
    }
}
