internal import LongLinkWire

/// One client session's bookkeeping on the server, as a pure state machine.
///
/// Each method is an event (a frame arrived, a handler finished, a timer fired, the server asked
/// the session to go away, the socket closed) and returns an action for ``ServerConnection`` to
/// perform: write a frame, run or cancel a handler, arm a timer, close. The machine itself does
/// no I/O, reads no clock and touches no shared store, so tests drive it directly.
///
/// It owns the session's phase (awaiting `Hello`, active, draining, closed), the negotiated
/// heartbeat and idle count, the bound principal, the table of requests in flight, and the
/// inflated payload bytes they hold: a compressed request is admitted first and only then
/// inflated, within a limit the machine sets from that budget. Every
/// event that closes the session hands back every request still in flight (in ``Close``, or from
/// ``connectionClosed()``), exactly once, so that the connection cancels each handler and lets go
/// of each de-duplication wait; after that the table is empty and stays empty.
///
/// Generic over `Execution`, what the connection attaches to a request whose handler it started
/// (its task, its deadline timer, its de-duplication run), so that tests need none of those. The
/// values its events take and hand back are in `ServerSessionStateMachine+Types.swift`.
struct ServerSessionStateMachine<Execution> {
    /// Where the session is in its life.
    enum Phase: Equatable {
        /// Connected; the first frame must be `Hello`.
        case awaitingHello
        /// `Welcome` was sent: requests are accepted.
        case active
        /// Going away (`GoAway` sent or received): requests in flight are answered, new ones are
        /// refused, and the connection closes once none is left.
        case draining
        /// Nothing more is read or sent.
        case closed
    }

    private(set) var phase = Phase.awaitingHello
    /// The `client_id` from `Hello` (empty before it).
    private(set) var clientID = ""
    /// The negotiated heartbeat interval (zero before `Hello`).
    private(set) var heartbeat = Duration.zero
    /// The principal a login handler bound this connection to, if any.
    private(set) var principal: String?
    /// The client sent `Sync` since the last binding: reliable pushes may flow.
    private(set) var synced = false

    private let configuration: Configuration
    /// By request id's bytes: two ids that are equal Swift `String`s but different bytes (NFC and
    /// NFD) are two requests, as the client and the de-duplication window see them.
    private var inFlight: [PrincipalKey: InFlightRequest] = [:]
    /// A handler runs inline, between ``startedInline()`` and ``finishedInline()``: its request is
    /// not in the table (no other event of the session can come in between), but it counts as in
    /// flight for going away.
    private var runningInline = false
    private var nextToken: UInt64 = 0
    /// The inflated payload bytes the requests in flight hold (see ``holdInflated(_:requestID:token:)``).
    private(set) var inflatedBytesHeld = 0
    /// Bytes arrived since the last heartbeat tick.
    private var sawInbound = false
    private var silentTicks = 0

    init(configuration: Configuration) {
        self.configuration = configuration
    }

    /// How many requests are in flight.
    var inFlightCount: Int { inFlight.count }

    /// The principal to send reliable pushes for, when pushes may be sent now: after `Hello`, a
    /// binding and a `Sync`, until closed (draining sessions still receive them).
    var reliablePushPrincipal: String? {
        guard phase == .active || phase == .draining, synced else { return nil }
        return principal
    }

    // MARK: Handshake

    /// What to do with a `Hello`.
    enum HelloAction {
        /// Send `Welcome` with this heartbeat interval and start the heartbeat.
        case sendWelcome(heartbeat: Duration)
        case closeConnection(Close)
        case ignore
    }

    /// A `Hello` arrived: the first one opens the session, a second one is a violation.
    mutating func receivedHello(_ hello: Frame.Hello) -> HelloAction {
        switch phase {
        case .awaitingHello: break
        case .active, .draining: return .closeConnection(violation(.invalidArgument, "a second Hello"))
        case .closed: return .ignore
        }
        guard hello.version == Frame.protocolVersion else {
            let reason =
                "unsupported protocol version \(hello.version); this server speaks \(Frame.protocolVersion)"
            return .closeConnection(
                close(.unsupportedVersion, goAway: Frame.GoAway(code: .failedPrecondition, reason: reason)))
        }
        guard !hello.clientID.isEmpty, hello.clientID.utf8.count <= 128 else {
            return .closeConnection(violation(.invalidArgument, "client_id must be 1 to 128 bytes"))
        }
        clientID = hello.clientID
        heartbeat =
            hello.heartbeatMilliseconds == 0 ? configuration.defaultHeartbeat : bounded(hello.heartbeatMilliseconds)
        phase = .active
        return .sendWelcome(heartbeat: heartbeat)
    }

    /// The handshake timeout fired: a session still without `Hello` closes.
    mutating func handshakeTimedOut() -> Close? {
        guard phase == .awaitingHello else { return nil }
        return violation(.invalidArgument, "no Hello within the handshake timeout")
    }

    /// The server is at its connection limit: this connection is turned away before any frame.
    mutating func rejectedAtConnectionLimit() -> Close {
        close(
            .connectionLimit,
            goAway: Frame.GoAway(
                code: .resourceExhausted, reason: "server at its connection limit", reconnect: true,
                retryAfterMilliseconds: 1_000))
    }

    // MARK: Requests

    /// A `Request` arrived. `hasHandler` says whether the router knows its method.
    mutating func receivedRequest(_ request: Frame.Request, hasHandler: Bool) -> RequestAction {
        switch sessionGate() {
        case .open: break
        case .closed: return .ignore
        case .refuse(let close): return .closeConnection(close)
        }
        let requestID = request.requestID
        guard !requestID.isEmpty, requestID.utf8.count <= 128 else {
            return .closeConnection(violation(.invalidArgument, "request_id must be 1 to 128 bytes"))
        }
        guard phase == .active else {
            return .reject(
                Frame.Status(code: .unavailable, message: "the server is going away; retry on a new connection"))
        }
        guard inFlight.isEmpty || inFlight[PrincipalKey(requestID)] == nil else { return .ignoreCopyInFlight }
        guard inFlight.count < configuration.maxInFlight else {
            return .rejectOverLimit(
                Frame.Status(
                    code: .resourceExhausted,
                    message: "too many requests in flight on this connection (limit \(configuration.maxInFlight))"))
        }
        guard hasHandler else {
            return .reject(Frame.Status(code: .unimplemented, message: "unknown method '\(request.method)'"))
        }
        // Admitted: only now may its payload cost the work of inflating it.
        guard request.compression != 0 else {
            nextToken += 1
            return .dispatch(token: nextToken)
        }
        let left = configuration.maxInflatedBytes - inflatedBytesHeld
        guard left > 0 else {
            return .rejectOverLimit(
                Frame.Status(
                    code: .resourceExhausted,
                    message: "this connection's requests in flight hold \(inflatedBytesHeld) inflated bytes "
                        + "(limit \(configuration.maxInflatedBytes))"))
        }
        nextToken += 1
        let limit = InflationLimit(
            compressedBytes: request.payload.count, maxFrameBytes: configuration.maxFrameBytes,
            ratio: configuration.maxInflationRatio, budget: left)
        return .inflateAndDispatch(token: nextToken, limit: limit)
    }

    /// A request dispatched after ``RequestAction/inflateAndDispatch(token:limit:)`` holds
    /// `bytes` of inflated payload until it leaves the table (answered, cancelled, timed out,
    /// closed). Nothing when it is not in flight (its handler ran inline, or it was answered from
    /// the de-duplication window).
    mutating func holdInflated(_ bytes: Int, requestID: String, token: UInt64) {
        guard bytes > 0, inFlight[PrincipalKey(requestID)]?.token == token else { return }
        inFlight[PrincipalKey(requestID)]?.inflatedBytes += bytes
        inflatedBytesHeld += bytes
    }

    /// A dispatched request is in flight: its handler runs as a task (`execution` is what stops
    /// it), or it waits for an execution elsewhere (`execution` holds at most its deadline). Its
    /// answer comes through
    /// ``handlerFinished(requestID:token:)``.
    mutating func track(requestID: String, token: UInt64, execution: Execution?) {
        inFlight[PrincipalKey(requestID)] = InFlightRequest(requestID: requestID, token: token, execution: execution)
    }

    /// The connection runs a dispatched request's handler inline, on the loop, and answers it in
    /// ``finishedInline()``.
    mutating func startedInline() {
        runningInline = true
    }

    /// The handler ``startedInline()`` announced returned.
    mutating func finishedInline() -> InlineFinishedAction {
        runningInline = false
        guard phase != .closed else { return .ignore }
        if let close = closeIfDrained() { return .sendResponseAndClose(close) }
        return .sendResponse
    }

    /// A request's answer is ready: its handler returned, or the de-duplication window answered
    /// it (a stored reply, or an execution on another connection).
    mutating func handlerFinished(requestID: String, token: UInt64) -> HandlerFinishedAction {
        guard let request = takeInFlight(requestID, token: token) else { return .ignore }
        if let close = closeIfDrained() { return .sendResponseAndClose(request, close) }
        return .sendResponse(request)
    }

    /// The deadline timer of a request fired.
    mutating func handlerTimedOut(requestID: String, token: UInt64) -> HandlerTimedOutAction {
        guard let request = takeInFlight(requestID, token: token) else { return .ignore }
        if let close = closeIfDrained() { return .failTimedOutAndClose(request, close) }
        return .failTimedOut(request)
    }

    /// A `Cancel` arrived: the caller gave up on the request.
    mutating func receivedCancel(requestID: String) -> CancelAction {
        switch sessionGate() {
        case .open: break
        case .closed: return .ignore
        case .refuse(let close): return .closeConnection(close)
        }
        guard let request = inFlight.removeValue(forKey: PrincipalKey(requestID)) else { return .ignore }
        inflatedBytesHeld -= request.inflatedBytes
        if let close = closeIfDrained() { return .cancelRequestAndClose(request, close) }
        return .cancelRequest(request)
    }

    // MARK: Pushes

    /// What to do with an `Ack`.
    enum AckAction {
        /// Mark these seqs acknowledged in the principal's store.
        case acknowledge(principal: String, seqs: [UInt64])
        case closeConnection(Close)
        /// No principal bound, or no seq: nothing to acknowledge.
        case ignore
    }

    /// An `Ack` arrived.
    mutating func receivedAck(seqs: [UInt64]) -> AckAction {
        switch sessionGate() {
        case .open: break
        case .closed: return .ignore
        case .refuse(let close): return .closeConnection(close)
        }
        guard let principal, !seqs.isEmpty else { return .ignore }
        return .acknowledge(principal: principal, seqs: seqs)
    }

    /// What to do with a `Sync`.
    enum SyncAction {
        /// Send the reliable pushes not yet acknowledged, from the first one.
        case resendReliablePushes
        case closeConnection(Close)
        case ignore
    }

    /// A `Sync` arrived: the client is logged in and wants what it missed.
    mutating func receivedSync() -> SyncAction {
        switch sessionGate() {
        case .open: break
        case .closed: return .ignore
        case .refuse(let close): return .closeConnection(close)
        }
        synced = true
        return .resendReliablePushes
    }

    /// What to do when a handler binds the connection to a principal.
    enum BindAction {
        /// Move the connection from `old` to the new principal in the server's registry and
        /// start its reliable pushes afresh (they flow after the next `Sync`).
        case rebind(from: String?)
        /// Draining or closed, or bound to that principal already.
        case ignore
    }

    /// A handler (typically the login) bound the connection to `principal`.
    mutating func bound(principal newPrincipal: String) -> BindAction {
        // By bytes: another spelling of the same name in Unicode is another principal.
        // Going away: the session has left its principal's connections and does not join another's.
        guard phase == .active || phase == .awaitingHello, !PrincipalKey.same(principal, newPrincipal) else {
            return .ignore
        }
        let old = principal
        principal = newPrincipal
        synced = false
        return .rebind(from: old)
    }

    // MARK: Other frames

    /// What to do with a `Ping`.
    enum PingAction {
        /// Answer with a `Pong`; `heartbeat` is the interval now in force when the `Ping` proposed
        /// one (restart the heartbeat timer with it, and say it in the `Pong`).
        case sendPong(heartbeat: Duration?)
        case closeConnection(Close)
        case ignore
    }

    /// A `Ping` arrived, proposing a new heartbeat interval when `proposedHeartbeat` > 0 (in
    /// milliseconds): the proposal is bounded as in `Hello` and in force at once, the idle timeout
    /// included (Protocol.md, "Changing the heartbeat on a live link").
    mutating func receivedPing(proposedHeartbeat: UInt32 = 0) -> PingAction {
        switch sessionGate() {
        case .open: break
        case .closed: return .ignore
        case .refuse(let close): return .closeConnection(close)
        }
        guard proposedHeartbeat > 0 else { return .sendPong(heartbeat: nil) }
        heartbeat = bounded(proposedHeartbeat)
        // The silence counted so far was against the old interval; the Ping itself is traffic.
        silentTicks = 0
        sawInbound = true
        return .sendPong(heartbeat: heartbeat)
    }

    /// A client's proposal within the configured bounds.
    private func bounded(_ milliseconds: UInt32) -> Duration {
        min(
            max(.milliseconds(Int64(milliseconds)), configuration.minimumHeartbeat), configuration.maximumHeartbeat)
    }

    /// The client sent `GoAway`: it is leaving, so what runs is answered and nothing new is
    /// accepted. Returns the close when nothing is left in flight (or the frame came first).
    mutating func receivedGoAway() -> Close? {
        switch sessionGate() {
        case .open: break
        case .closed: return nil
        case .refuse(let close): return close
        }
        if phase == .active { phase = .draining }
        return closeIfDrained()
    }

    /// A frame with nothing to act on arrived (`Pong`). Empty frames and unknown kinds are ignored
    /// in every phase and never reach the machine.
    mutating func receivedIgnorableFrame() -> Close? {
        guard case .refuse(let close) = sessionGate() else { return nil }
        return close
    }

    /// A frame only a server sends arrived (`Welcome`, `Response`, `Push`).
    mutating func receivedServerFrame() -> Close? {
        switch sessionGate() {
        case .open: return violation(.invalidArgument, "a frame only a server sends")
        case .closed: return nil
        case .refuse(let close): return close
        }
    }

    /// An incomplete frame outlived ``ServerConfiguration/partialFrameTimeout``.
    mutating func partialFrameTimedOut(after timeout: Duration) -> Close? {
        guard phase != .closed else { return nil }
        let reason = "a partial frame took longer than \(timeout) to arrive"
        return close(.slowFrame, goAway: Frame.GoAway(code: .deadlineExceeded, reason: reason, reconnect: true))
    }

    /// The bytes did not decode as frames (`code` says how: too large, or malformed).
    mutating func receivedMalformedBytes(code: StatusCode, reason: String) -> Close? {
        guard phase != .closed else { return nil }
        return violation(code, reason)
    }

    // MARK: Heartbeat

    /// Bytes arrived: the link is alive.
    mutating func receivedBytes() {
        guard phase != .closed else { return }
        sawInbound = true
    }

    /// What to do on a heartbeat tick.
    enum HeartbeatAction {
        case scheduleNextTick
        /// Three intervals passed without a byte from the client: close.
        case closeConnection(Close)
        /// Closed: no more ticks.
        case stop
    }

    /// The heartbeat interval passed.
    mutating func heartbeatTick() -> HeartbeatAction {
        guard phase == .active || phase == .draining else { return .stop }
        if sawInbound {
            sawInbound = false
            silentTicks = 0
            return .scheduleNextTick
        }
        silentTicks += 1
        guard silentTicks >= 3 else { return .scheduleNextTick }
        return .closeConnection(
            close(
                .idle,
                goAway: Frame.GoAway(
                    code: .unavailable, reason: "no traffic for three heartbeat intervals", reconnect: true)))
    }

    // MARK: Going away

    /// What to do when the server asks the session to go away.
    enum GoAwayRequestAction {
        /// Send this `GoAway`, then wait for the requests in flight (arm the drain timeout).
        case sendGoAwayAndDrain(Frame.GoAway)
        /// Nothing is in flight: send the close's `GoAway` and close now.
        case closeConnection(Close)
        /// Draining or closed already.
        case ignore
    }

    /// The server asked the session to go away (a kick, a restart, a shutdown).
    mutating func goAwayRequested(_ goAway: Frame.GoAway) -> GoAwayRequestAction {
        guard phase == .active || phase == .awaitingHello else { return .ignore }
        guard inFlight.isEmpty, !runningInline else {
            phase = .draining
            return .sendGoAwayAndDrain(goAway)
        }
        return .closeConnection(close(.drained, goAway: goAway))
    }

    /// The drain timeout passed: close, handing back what is still in flight.
    mutating func drainTimedOut() -> Close? {
        guard phase == .draining else { return nil }
        return close(.drainTimedOut, goAway: nil)
    }

    /// The socket closed (the peer left, the link failed, the server shut down, or one of the
    /// closes above completed). Returns every request still in flight; empty when a close above
    /// handed them back already.
    mutating func connectionClosed() -> [InFlightRequest] {
        phase = .closed
        inflatedBytesHeld = 0
        defer { inFlight.removeAll() }
        return Array(inFlight.values)
    }

    // MARK: Helpers

    /// Closes a draining session once nothing is left in flight (its `GoAway` went out already).
    private mutating func closeIfDrained() -> Close? {
        guard phase == .draining, inFlight.isEmpty, !runningInline else { return nil }
        return close(.drained, goAway: nil)
    }

    private mutating func takeInFlight(_ requestID: String, token: UInt64) -> InFlightRequest? {
        guard let request = inFlight[PrincipalKey(requestID)], request.token == token else { return nil }
        inFlight[PrincipalKey(requestID)] = nil
        inflatedBytesHeld -= request.inflatedBytes
        return request
    }

    /// Whether a frame other than `Hello` may be handled now.
    private enum SessionGate {
        /// After `Hello` and before closing.
        case open
        /// Nothing more is handled.
        case closed
        /// `Hello` has not arrived: the frame breaks the protocol and the session closes.
        case refuse(Close)
    }

    private mutating func sessionGate() -> SessionGate {
        switch phase {
        case .active, .draining: return .open
        case .closed: return .closed
        case .awaitingHello: return .refuse(violation(.invalidArgument, "the first frame must be Hello"))
        }
    }

    private mutating func violation(_ code: StatusCode, _ reason: String) -> Close {
        close(.protocolViolation, goAway: Frame.GoAway(code: code, reason: reason, reconnect: true))
    }

    private mutating func close(_ reason: Close.Reason, goAway: Frame.GoAway?) -> Close {
        phase = .closed
        inflatedBytesHeld = 0
        defer { inFlight.removeAll() }
        return Close(reason: reason, goAway: goAway, inFlight: Array(inFlight.values))
    }
}
