import LongLinkTransport
import LongLinkWire
import Synchronization

/// One client connection on the server: the handshake, request dispatch, pushes, heartbeat and
/// going away.
///
/// Every mutable property is confined to the connection's event loop; methods other threads call
/// (``deliver(requestID:token:response:)``, ``requestPush()``, ``bind(principal:)``, ``goAway(code:reason:reconnect:retryAfter:)``)
/// hop onto it first.
final class ServerConnection: ConnectionHandler, @unchecked Sendable {
    private enum State {
        case awaitingHello
        case open
        case draining
        case closed
    }

    private struct InFlight {
        var token: UInt64
        var task: Task<Void, Never>?
        var timer: EventLoopTimer?
    }

    let connection: Connection
    private let core: ServerCore
    private var loop: EventLoop { connection.eventLoop }
    private var configuration: ServerConfiguration { core.configuration }

    // The properties on the per-request path opt out of dynamic exclusivity checks: the loop
    // confines them and no access to one overlaps another (the checks were about a twentieth of
    // the server thread at 1,024 requests in flight, perf, `bench rpc`).
    @exclusivity(unchecked) private var state = State.awaitingHello
    @exclusivity(unchecked) private var decoder: FrameDecoder
    @exclusivity(unchecked) private var frames: [Frame] = []
    @exclusivity(unchecked) private var clientID = ""
    /// The client's part of every de-duplication key, hashed once at `Hello`.
    @exclusivity(unchecked) private var dedupeClient = DedupeKey.Client("")
    /// The last method routed and its route: a connection usually calls a few methods, so this
    /// saves hashing the method name per request (the router never changes).
    @exclusivity(unchecked) private var lastMethod = ""
    @exclusivity(unchecked) private var lastRoute: Router.Route?
    /// The time, read once per batch of frames (and again every few frames): requests decoded
    /// together arrived together, and the clock costs more than the rest of an inline request.
    @exclusivity(unchecked) private var now = ContinuousClock.now
    /// `now` on the de-duplication window's time line (``ServerCore/dedupeTime(_:)``).
    @exclusivity(unchecked) private var nowOnWindow: Int64 = 0
    @exclusivity(unchecked) private var principal: String?
    private var synced = false
    private var lastPushedSeq: UInt64 = 0
    /// Reliable pushes sent since the last `Sync` (or login) and not yet acknowledged here, at most
    /// `configuration.reliablePushWindow`: the send window.
    private var pushesInFlight = 0
    /// The last pump stopped at a full window (not at an unwritable socket or an empty store), so
    /// an `Ack` that frees room must pump again.
    private var windowLimited = false
    /// Armed while the window is full: if no `Ack` frees room before it fires, the window is
    /// opened again (`configuration.reliablePushWindowTimeout`).
    private var windowTimer: EventLoopTimer?
    /// An `Ack` freed room since `windowTimer` was armed.
    private var ackedSinceWindowTimer = false
    @exclusivity(unchecked) private var inFlight: [String: InFlight] = [:]
    @exclusivity(unchecked) private var nextToken: UInt64 = 0
    /// The de-duplication hashes of the requests in `frames`, in order, and the next one to use.
    @exclusivity(unchecked) private var batchHashes: [Int] = []
    @exclusivity(unchecked) private var batchHashCursor = 0
    /// What the warming reads add up to: kept so that they are not optimised away.
    @exclusivity(unchecked) private var warmth: UInt64 = 0
    private var heartbeat: Duration = .zero
    @exclusivity(unchecked) private var sawInbound = false
    private var silentTicks = 0
    @exclusivity(unchecked) private var readingPaused = false
    private var handshakeTimer: EventLoopTimer?
    private var heartbeatTimer: EventLoopTimer?
    private var drainTimer: EventLoopTimer?
    private let pushRequested = Atomic<Bool>(false)

    init(connection: Connection, core: ServerCore) {
        self.connection = connection
        self.core = core
        self.decoder = FrameDecoder(maxFrameBytes: core.configuration.maxFrameBytes)
    }

    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inEventLoop { body() } else { loop.execute(body) }
    }

    private func send(_ frame: Frame) {
        connection.write(encoding: { frame.encodeDelimited(into: &$0) })
    }

    // MARK: Lifecycle

    func start() {
        connection.start(handler: self)
        handshakeTimer = loop.scheduleTimer(after: configuration.handshakeTimeout) { [self] in
            guard state == .awaitingHello else { return }
            violation(.invalidArgument, "no Hello within the handshake timeout")
        }
    }

    /// Turns the connection away at the connection limit.
    func reject() {
        send(
            .goAway(
                Frame.GoAway(
                    code: .resourceExhausted, reason: "server at its connection limit", reconnect: true,
                    retryAfterMilliseconds: 1_000)))
        state = .closed
        connection.close(.graceful)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        guard state != .closed else { return }
        sawInbound = true
        var failure: WireFormatError?
        do {
            try decoder.decode(bytes, into: &frames)
        } catch {
            failure = error
        }
        processFrames()
        if let failure, state != .closed {
            if case .frameTooLarge = failure.kind {
                violation(.resourceExhausted, "frame too large: \(failure)")
            } else {
                violation(.invalidArgument, "malformed frame: \(failure)")
            }
        }
    }

    /// Handles decoded frames in order. When the connection stops being writable (a client that
    /// does not read its replies), the rest waits and the socket is no longer read, so server
    /// memory stays bounded by the write buffer's high watermark plus the replies of the requests
    /// already in flight.
    private func processFrames() {
        warmDedupeWindow()
        var index = 0
        while index < frames.count, state != .closed {
            // Fresh at the start of a batch and every 64 frames, so that slow handlers cannot make it stale.
            if index & 63 == 0 {
                now = .now
                nowOnWindow = core.dedupeTime(now)
            }
            handle(frames[index])
            index += 1
            if !connection.isWritable { break }
        }
        if index == frames.count {
            frames.removeAll(keepingCapacity: true)
        } else {
            frames.removeFirst(index)
        }
        if state != .closed, !readingPaused, !connection.isWritable {
            readingPaused = true
            core.counters.readPauses.increment()
            connection.pauseReading()
        }
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        guard connection.isWritable, state != .closed else { return }
        processFrames()
        if readingPaused, connection.isWritable {
            readingPaused = false
            connection.resumeReading()
        }
        pumpReliablePushes()
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        state = .closed
        for timer in [handshakeTimer, heartbeatTimer, drainTimer, windowTimer].compactMap({ $0 }) {
            loop.cancelTimer(timer)
        }
        let abandoned = Array(inFlight)
        inFlight.removeAll()
        release(abandoned[...], shuttingDown: core.isShuttingDown)
        core.unregister(self, principal: principal)
    }

    /// How many requests of a closed connection ``release(_:shuttingDown:)`` lets go of per loop
    /// turn: each costs some microseconds (its timer, its handler's task). In one go, the
    /// `bench timeouts` probe exiting with tens of thousands of requests still in flight kept
    /// another connection on the loop waiting for up to half a second.
    static let releasedPerTurn = 1_024

    /// Lets go of the requests a closed connection had in flight, in slices of ``releasedPerTurn``
    /// with the loop's sockets served in between (the next slice waits for the next turn, as a
    /// due timer does). Nothing else reads them: they left `inFlight` when the connection closed,
    /// so a timer or a handler finishing in the meantime finds nothing to answer. All at once when
    /// the server shuts down: nobody waits then, and the loop may stop before a later turn.
    private func release(_ abandoned: ArraySlice<(key: String, value: InFlight)>, shuttingDown: Bool) {
        let end =
            shuttingDown ? abandoned.endIndex : min(abandoned.endIndex, abandoned.startIndex + Self.releasedPerTurn)
        for (requestID, entry) in abandoned[..<end] {
            if let timer = entry.timer { loop.cancelTimer(timer) }
            if core.dedupeEnabled {
                // The execution goes on: its result is stored so that the client's resend after
                // reconnecting is answered without running the handler twice.
                _ = core.dedupe.withLock {
                    $0.removeWaiter(key(requestID)) { $0.connection === self && $0.token == entry.token }
                }
                if shuttingDown { entry.task?.cancel() }
            } else {
                entry.task?.cancel()
            }
        }
        guard end < abandoned.endIndex else { return }
        let rest = abandoned[end...]
        loop.scheduleTimer(after: .zero) { [self] in release(rest, shuttingDown: shuttingDown) }
    }

    // MARK: Frames

    private func handle(_ frame: Frame) {
        if state == .awaitingHello {
            guard case .hello(let hello) = frame else {
                violation(.invalidArgument, "the first frame must be Hello")
                return
            }
            handleHello(hello)
            return
        }
        switch frame {
        case .request(let request): handleRequest(request)
        case .cancel(let cancel): handleCancel(cancel.requestID)
        case .ack(let ack): handleAck(ack.seqs)
        case .sync: handleSync()
        case .ping(let ping): send(.pong(Frame.Pong(nonce: ping.nonce, loadPermille: core.loadPermille)))
        case .pong, .unrecognized: break
        case .goAway:
            // The client is leaving: answer what runs, accept nothing new.
            if state == .open { state = .draining }
            closeIfDrained()
        case .hello: violation(.invalidArgument, "a second Hello")
        case .welcome, .response, .push: violation(.invalidArgument, "a frame only a server sends")
        }
    }

    private func handleHello(_ hello: Frame.Hello) {
        guard hello.version == Frame.protocolVersion else {
            goAwayAndClose(
                .failedPrecondition,
                "unsupported protocol version \(hello.version); this server speaks \(Frame.protocolVersion)",
                reconnect: false)
            return
        }
        guard !hello.clientID.isEmpty, hello.clientID.utf8.count <= 128 else {
            violation(.invalidArgument, "client_id must be 1 to 128 bytes")
            return
        }
        clientID = hello.clientID
        dedupeClient = DedupeKey.Client(clientID)
        let proposed = Duration.milliseconds(Int64(hello.heartbeatMilliseconds))
        heartbeat =
            hello.heartbeatMilliseconds == 0
            ? configuration.defaultHeartbeat
            : min(max(proposed, configuration.minimumHeartbeat), configuration.maximumHeartbeat)
        state = .open
        send(
            .welcome(
                Frame.Welcome(
                    serverID: configuration.serverID, heartbeatMilliseconds: heartbeat.wireMilliseconds,
                    maxFrameBytes: UInt32(configuration.maxFrameBytes), loadPermille: core.loadPermille,
                    dedupeWindowMilliseconds: configuration.dedupeWindow.wireMilliseconds)))
        if let handshakeTimer { loop.cancelTimer(handshakeTimer) }
        scheduleHeartbeatTick()
    }

    /// Hashes the batch's de-duplication keys up front and lets the window load the memory they
    /// and the evictions they cause will touch (see ``DedupeWindow/warm(hashes:)``): a window of
    /// 100,000 entries misses the cache twice per request otherwise, one miss after another.
    private func warmDedupeWindow() {
        batchHashes.removeAll(keepingCapacity: true)
        batchHashCursor = 0
        // Only after Hello: the keys need the client's id.
        guard state == .open, core.dedupeEnabled, frames.count >= 8 else { return }
        for frame in frames {
            if case .request(let request) = frame {
                batchHashes.append(DedupeKey.hash(client: dedupeClient, requestID: request.requestID))
            }
        }
        let hashes = batchHashes
        warmth &+= core.dedupe.withLock { $0.warm(hashes: hashes) }
    }

    private func handleRequest(_ request: Frame.Request) {
        // The hash `warmDedupeWindow` computed for this request (requests are handled in order).
        let precomputedHash = batchHashCursor < batchHashes.count ? batchHashes[batchHashCursor] : nil
        batchHashCursor += 1
        core.counters.requestsReceived.increment()
        guard !request.requestID.isEmpty, request.requestID.utf8.count <= 128 else {
            violation(.invalidArgument, "request_id must be 1 to 128 bytes")
            return
        }
        guard state == .open else {
            respond(request.requestID, .unavailable, "the server is going away; retry on a new connection")
            return
        }
        // A copy of a request this connection already waits for: its answer will come once.
        guard inFlight.isEmpty || inFlight[request.requestID] == nil else {
            core.counters.requestsJoined.increment()
            return
        }
        guard inFlight.count < configuration.maxInFlightPerConnection else {
            core.counters.requestsRejected.increment()
            respond(
                request.requestID, .resourceExhausted,
                "too many requests in flight on this connection (limit \(configuration.maxInFlightPerConnection))")
            return
        }
        guard let handler = route(for: request.method) else {
            respond(request.requestID, .unimplemented, "unknown method '\(request.method)'")
            return
        }
        nextToken += 1
        let token = nextToken
        guard core.dedupeEnabled else {
            execute(request, handler: handler, token: token, run: nil)
            return
        }
        let dedupeKey = key(request.requestID, hash: precomputedHash)
        let waiter = DedupeWaiter(connection: self, requestID: request.requestID, token: token)
        let now = nowOnWindow
        let action = core.dedupe.withLock { $0.arrive(dedupeKey, waiter: waiter, at: now) }
        switch action {
        case .execute(let run):
            execute(request, handler: handler, token: token, run: run)
        case .wait:
            core.counters.requestsJoined.increment()
            inFlight[request.requestID] = InFlight(token: token, task: nil, timer: nil)
        case .replay(var response):
            core.counters.requestsReplayed.increment()
            response.requestID = request.requestID
            send(.response(response))
            core.counters.responsesSent.increment()
        }
    }

    private func execute(
        _ request: Frame.Request, handler route: Router.Route, token: UInt64,
        run: DedupeRun?
    ) {
        let timeout: Duration? =
            request.timeoutMilliseconds > 0 ? .milliseconds(Int64(request.timeoutMilliseconds)) : nil
        let context = RequestContext(
            requestID: request.requestID, method: request.method, metadata: request.metadata, clientID: clientID,
            principal: principal, deadline: timeout.map { now.advanced(by: $0) },
            connectionID: connection.id, session: self)
        let requestID = request.requestID
        let payload = request.payload
        let core = self.core
        core.counters.handlersStarted.increment()
        let handler: Router.Handler
        switch route {
        case .synchronous(let synchronous):
            // Inline, on the loop: no task, no timer, no in-flight entry (no other frame of this
            // connection can arrive before it returns), and not counted as running (it is over
            // before anyone could read the counter).
            let response = Self.response(requestID: requestID) { try synchronous(payload, context) }
            finishedInline(
                requestID: requestID, token: token, run: run, response: response)
            return
        case .async(let asynchronous):
            handler = asynchronous
        }
        core.counters.handlersRunning.increment()
        let executor: (any TaskExecutor)? = configuration.runsHandlersOnEventLoop ? loop : nil
        let task = Task(executorPreference: executor) { [self] in
            let response: Frame.Response?
            do {
                let reply = try await handler(payload, context)
                response = Frame.Response(requestID: requestID, payload: reply)
            } catch {
                response = Self.response(requestID: requestID) { throw error }
            }
            core.executionFinished(
                origin: self, requestID: requestID, token: token, run: run,
                response: response)
        }
        var entry = InFlight(token: token, task: task, timer: nil)
        if let timeout {
            entry.timer = loop.scheduleTimer(after: timeout) { [self] in
                handlerTimedOut(requestID: requestID, token: token, run: run)
            }
        }
        inFlight[requestID] = entry
    }

    /// A synchronous handler returned: answers this request directly and, through the
    /// de-duplication window, any copy that joined it from another connection meanwhile.
    private func finishedInline(
        requestID: String, token: UInt64, run: DedupeRun?, response: Frame.Response?
    ) {
        guard let run else {
            if let response { answer(requestID: requestID, response: response) }
            return
        }
        let (waiters, reply) = core.settle(run, response: response, at: nowOnWindow)
        for waiter in waiters {
            if waiter.connection === self, waiter.token == token {
                answer(requestID: requestID, response: reply)
            } else {
                waiter.connection.deliver(requestID: waiter.requestID, token: waiter.token, response: reply)
            }
        }
    }

    /// The response for a handler's outcome: its reply, its `LongLinkError` as a status, `nil` for a
    /// cancellation (no response is sent), or `INTERNAL` for any other error (whose text is not sent).
    static func response(requestID: String, _ body: () throws -> [UInt8]) -> Frame.Response? {
        do {
            return Frame.Response(requestID: requestID, payload: try body())
        } catch let error as LongLinkError {
            return Frame.Response(
                requestID: requestID, status: Frame.Status(code: error.code.status, message: error.message))
        } catch is CancellationError {
            return nil
        } catch {
            return Frame.Response(
                requestID: requestID, status: Frame.Status(code: .internalError, message: "the handler failed"))
        }
    }

    /// At most 15 bytes of UTF-8 on purpose: a Swift client decodes a string that short without
    /// allocating, and when 100,000 requests time out together, their 100,000 late replies arrive
    /// while the client is failing those calls itself (the former 45-byte text: about 14 ms of
    /// the client loop in that window instead of 11, `bench timeouts`, medians of 4 and 6 runs).
    private static let timedOutStatus = Frame.Status(code: .deadlineExceeded, message: "deadline passed")

    private func handlerTimedOut(
        requestID: String, token: UInt64, run: DedupeRun?
    ) {
        guard let index = inFlight.index(forKey: requestID), inFlight.values[index].token == token else { return }
        core.counters.requestsTimedOut.increment()
        let timedOut = Frame.Response(requestID: requestID, status: Self.timedOutStatus)
        guard let run else {
            // Answered here rather than through `deliver`: that would look the request up again
            // and cancel this timer, which has fired (it matters when 100,000 expire together).
            let entry = inFlight.remove(at: index).value
            entry.task?.cancel()
            answer(requestID: requestID, response: timedOut)
            return
        }
        inFlight.values[index].task?.cancel()
        // Timed-out executions are not stored: a later copy runs again.
        let waiters = core.dedupe.withLock { $0.abandon(run) }
        for waiter in waiters {
            waiter.connection.deliver(requestID: waiter.requestID, token: waiter.token, response: timedOut)
        }
    }

    private func handleCancel(_ requestID: String) {
        guard let entry = inFlight.removeValue(forKey: requestID) else { return }
        core.counters.requestsCancelled.increment()
        if let timer = entry.timer { loop.cancelTimer(timer) }
        if core.dedupeEnabled {
            let nobodyWaits = core.dedupe.withLock {
                $0.removeWaiter(key(requestID)) { $0.connection === self && $0.token == entry.token }
            }
            // Stop the handler only when no other copy of the request waits for it.
            if nobodyWaits { entry.task?.cancel() }
        } else {
            entry.task?.cancel()
        }
        closeIfDrained()
    }

    /// Answers a request this connection waits for (any thread).
    func deliver(requestID: String, token: UInt64, response: Frame.Response) {
        // On the loop already (a synchronous route, a handler that ran there): no closure, no hop.
        if loop.inEventLoop {
            deliverOnLoop(requestID: requestID, token: token, response: response)
        } else {
            loop.execute { [self] in deliverOnLoop(requestID: requestID, token: token, response: response) }
        }
    }

    private func deliverOnLoop(requestID: String, token: UInt64, response: Frame.Response) {
        guard state != .closed, let index = inFlight.index(forKey: requestID), inFlight.values[index].token == token
        else { return }
        let entry = inFlight.remove(at: index).value
        if let timer = entry.timer { loop.cancelTimer(timer) }
        answer(requestID: requestID, response: response)
    }

    /// Sends the response to a request this connection no longer tracks as in flight.
    private func answer(requestID: String, response: Frame.Response) {
        guard state != .closed else { return }
        var response = response
        response.requestID = requestID
        send(.response(response))
        core.counters.responsesSent.increment()
        closeIfDrained()
    }

    private func respond(_ requestID: String, _ code: StatusCode, _ message: String) {
        send(.response(Frame.Response(requestID: requestID, status: Frame.Status(code: code, message: message))))
        core.counters.responsesSent.increment()
    }

    // MARK: Sessions and pushes

    /// Binds the connection to a principal (any thread; on the loop at once when called there, so
    /// that a login reply cannot overtake its binding).
    func bind(principal newPrincipal: String) {
        onLoop { [self] in
            guard state != .closed, principal != newPrincipal else { return }
            core.rebind(self, from: principal, to: newPrincipal)
            principal = newPrincipal
            synced = false
            restartReliablePushes()
        }
    }

    private func handleSync() {
        synced = true
        restartReliablePushes()
        pumpReliablePushes()
    }

    /// Reliable pushes go out again from the first unacknowledged one (after `Sync`, or for a new
    /// principal), so what was outstanding no longer counts against the window.
    private func restartReliablePushes() {
        lastPushedSeq = 0
        pushesInFlight = 0
        windowLimited = false
    }

    private func handleAck(_ seqs: [UInt64]) {
        guard let principal, !seqs.isEmpty else { return }
        core.store.acknowledge(principal: principal, seqs: seqs)
        core.counters.acksReceived.increment(by: seqs.count)
        guard pushesInFlight > 0 else { return }
        // Only seqs this connection may have sent since its last Sync free room; others (zero,
        // not sent yet, repeats) are clamped so that the window never opens beyond its size.
        var freed = 0
        for seq in seqs where seq > 0 && seq <= lastPushedSeq { freed += 1 }
        pushesInFlight = max(0, pushesInFlight - freed)
        if freed > 0 { ackedSinceWindowTimer = true }
        if windowLimited, pushesInFlight < configuration.reliablePushWindow { pumpReliablePushes() }
    }

    /// Asks the loop to send newly stored reliable pushes (any thread; coalesced).
    func requestPush() {
        guard !pushRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in pumpReliablePushes() }
    }

    /// Sends stored pushes after the last one sent, in seq order, while the connection is writable
    /// and the send window has room.
    private func pumpReliablePushes() {
        pushRequested.store(false, ordering: .releasing)
        guard state == .open || state == .draining, synced, let principal else { return }
        let window = configuration.reliablePushWindow
        windowLimited = false
        while connection.isWritable {
            let room = window - pushesInFlight
            guard room > 0 else {
                windowLimited = true
                armWindowTimer()
                break
            }
            let batch = core.store.unacknowledged(principal: principal, after: lastPushedSeq, limit: min(256, room))
            guard let last = batch.last else { break }
            for push in batch {
                send(.push(Frame.Push(seq: push.seq, topic: push.topic, payload: push.payload)))
            }
            core.counters.reliablePushesSent.increment(by: batch.count)
            pushesInFlight += batch.count
            lastPushedSeq = last.seq
        }
    }

    /// Arms the timer that opens a full window again when no `Ack` frees room in time: a client may
    /// hold pushes unacknowledged for as long as it likes (LongLink's client holds those of a
    /// topic nobody reads yet), and were they to fill the window, pushes of every other topic
    /// would wait behind them forever.
    private func armWindowTimer() {
        guard windowTimer == nil else { return }
        ackedSinceWindowTimer = false
        windowTimer = loop.scheduleTimer(after: configuration.reliablePushWindowTimeout) { [self] in
            windowTimer = nil
            guard windowLimited, state == .open || state == .draining else { return }
            if ackedSinceWindowTimer {
                armWindowTimer()
                return
            }
            // The outstanding pushes are parked with the client: count afresh (their acks, should
            // they come, are clamped at zero).
            core.counters.pushWindowsReopened.increment()
            pushesInFlight = 0
            pumpReliablePushes()
        }
    }

    /// Sends a best-effort push if the connection is established and writable (any thread).
    func sendBestEffort(topic: String, payload: [UInt8]) {
        onLoop { [self] in
            guard state == .open else { return }
            if connection.isWritable {
                send(.push(Frame.Push(seq: 0, topic: topic, payload: payload)))
                core.counters.bestEffortPushesSent.increment()
            } else {
                core.counters.bestEffortPushesDropped.increment()
            }
        }
    }

    // MARK: Going away

    /// Sends `GoAway`, answers what is in flight (bounded by the drain timeout), then closes (any thread).
    func goAway(code: StatusCode, reason: String, reconnect: Bool, retryAfter: Duration) {
        onLoop { [self] in
            guard state == .open || state == .awaitingHello else { return }
            send(
                .goAway(
                    Frame.GoAway(
                        code: code, reason: reason, reconnect: reconnect,
                        retryAfterMilliseconds: retryAfter.wireMilliseconds)))
            state = .draining
            drainTimer = loop.scheduleTimer(after: configuration.drainTimeout) { [self] in
                guard state == .draining else { return }
                state = .closed
                connection.close(.graceful)
            }
            closeIfDrained()
        }
    }

    /// Closes without waiting (any thread).
    func forceClose(mode: CloseMode = .immediately) {
        connection.close(mode, error: LongLinkError(code: .shutdown, message: "server shut down"))
    }

    private func closeIfDrained() {
        guard state == .draining, inFlight.isEmpty else { return }
        state = .closed
        connection.close(.graceful)
    }

    private func goAwayAndClose(_ code: StatusCode, _ reason: String, reconnect: Bool) {
        send(.goAway(Frame.GoAway(code: code, reason: reason, reconnect: reconnect)))
        state = .closed
        connection.close(.graceful)
    }

    private func violation(_ code: StatusCode, _ reason: String) {
        core.counters.protocolViolations.increment()
        goAwayAndClose(code, reason, reconnect: true)
    }

    // MARK: Heartbeat

    private func scheduleHeartbeatTick() {
        heartbeatTimer = loop.scheduleTimer(after: heartbeat) { [self] in
            guard state == .open || state == .draining else { return }
            if sawInbound {
                sawInbound = false
                silentTicks = 0
            } else {
                silentTicks += 1
                if silentTicks >= 3 {
                    core.counters.idleClosures.increment()
                    goAwayAndClose(.unavailable, "no traffic for three heartbeat intervals", reconnect: true)
                    return
                }
            }
            scheduleHeartbeatTick()
        }
    }

    // MARK: Helpers

    /// The request's de-duplication key; `hash` when ``warmDedupeWindow()`` computed it already.
    private func key(_ requestID: String, hash: Int? = nil) -> DedupeKey {
        DedupeKey(client: dedupeClient, requestID: requestID, hash: hash)
    }

    private func route(for method: String) -> Router.Route? {
        if let lastRoute, method == lastMethod { return lastRoute }
        let route = core.router.route(for: method)
        if route != nil {
            lastMethod = method
            lastRoute = route
        }
        return route
    }
}
