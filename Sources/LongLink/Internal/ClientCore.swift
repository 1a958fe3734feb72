import LongLinkTransport
import LongLinkWire
import Synchronization

/// How a link ended, as the supervisor sees it.
enum LinkEnd: Sendable {
    /// The connection dropped, was declared dead, or broke the protocol.
    case closed(LongLinkError?)
    /// The server sent `GoAway` (and then closed, or the client closed after it).
    case goAway(Frame.GoAway)
    /// The client is shutting down.
    case shutdown
}

/// Why a wait before reconnecting ended.
enum RetryWake: Sendable {
    case timer
    case networkChanged
    case shutdown
}

/// The client's state, owned by one actor that runs on the client's event loop: pending requests
/// and the offline queue, the current link, heartbeats, pushes and acknowledgements.
///
/// The actor's executor is the event loop of its connections, so frames that arrive are handled
/// without a thread hop (`assumeIsolated` from the connection's callbacks), and writes coalesce
/// into one system call per loop iteration.
actor ClientCore {
    nonisolated let loop: EventLoop
    nonisolated let configuration: ClientConfiguration
    nonisolated var clock: any LongLinkClock { configuration.clock }

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        loop.asUnownedSerialExecutor()
    }

    /// One connection's state. Confined to the actor (hot flags unchecked, as the actor's own state).
    final class Link {
        let generation: UInt64
        let connection: Connection
        let endpoint: Endpoint
        @exclusivity(unchecked) var welcome: Frame.Welcome?
        var welcomeWaiter: CheckedContinuation<Frame.Welcome, any Error>?
        var handshakeTimer: (any ScheduledWork)?
        @exclusivity(unchecked) var gateOpen = false
        var synced = false
        var goAway: Frame.GoAway?
        var heartbeat: Duration = .seconds(15)
        var tick: (any ScheduledWork)?
        var monitor = HeartbeatMonitor()
        @exclusivity(unchecked) var receivedSinceTick = false
        @exclusivity(unchecked) var sentSinceTick = false
        var probe: (any ScheduledWork)?
        @exclusivity(unchecked) var receivedSinceProbe = false
        var ping: (nonce: UInt64, sentAt: ContinuousClock.Instant)?
        var endWaiter: CheckedContinuation<LinkEnd, Never>?
        @exclusivity(unchecked) var end: LinkEnd?
        @exclusivity(unchecked) var closing = false

        init(generation: UInt64, connection: Connection, endpoint: Endpoint) {
            self.generation = generation
            self.connection = connection
            self.endpoint = endpoint
        }

        var isEstablished: Bool { welcome != nil && end == nil && !closing }
    }

    // MARK: State
    //
    // The properties on the per-request and per-push paths opt out of dynamic exclusivity checks:
    // the actor confines them to the loop and no access to one overlaps another, and the checks
    // cost about a tenth of the loop's time at 1,024 requests in flight (perf, `bench rpc`).

    @exclusivity(unchecked) private var link: Link?
    private var nextGeneration: UInt64 = 0
    @exclusivity(unchecked) private var pending = PendingTable()
    @exclusivity(unchecked) private var queue = OfflineQueue()
    @exclusivity(unchecked) private var deadlines = DeadlineBuckets()
    /// Calls submitted from callers' threads, waiting for the loop to admit them.
    nonisolated let submissions = SubmissionInbox()
    /// Callers the deadline timer has resumed with a timeout (counted after the resume, also when
    /// a mass expiry resumes them off the loop): what `bench timeouts` waits for.
    nonisolated let expiredCallersResumed = Atomic<Int>(0)
    /// Callers the deadline timer has failed (counted in its pass, before any is resumed):
    /// ``expiredCallersResumed`` reaches it once every one is resumed. `statistics.timeouts` is
    /// not that number: it also counts calls the server's `DEADLINE_EXCEEDED` reply failed first.
    nonisolated let expiredByTimer = Atomic<Int>(0)
    /// Callers of replies resumed off the loop (see ``ResumeBatch``), counted per batch.
    nonisolated let callersResumedOffLoop = Atomic<Int>(0)
    @exclusivity(unchecked) private var submissionScratch: [PendingCall] = []
    /// Callers finished while the loop handles a read's frames (see ``linkReceived(_:_:)``).
    @exclusivity(unchecked) private var readResumes = ResumeBatch()
    /// True while ``linkReceived(_:_:)`` runs: ``finish(_:_:)`` then adds to ``readResumes``.
    @exclusivity(unchecked) private var batchingResumes = false
    private var deadlineTimer: (any ScheduledWork)?
    /// When the deadline timer is set for, in nanoseconds from the deadline index's origin.
    @exclusivity(unchecked) private var deadlineTimerAt: Int64?
    @exclusivity(unchecked) private var terminalError: LongLinkError?
    @exclusivity(unchecked) private var shuttingDown = false
    private var shutdownTimer: (any ScheduledWork)?
    private var retryWaiter: CheckedContinuation<RetryWake, Never>?
    private var retryTimer: (any ScheduledWork)?
    private var pendingWake: RetryWake?
    private var inBackground = false
    private var nextPingNonce: UInt64 = 0

    @exclusivity(unchecked) private var subscribers: [UInt64: PushSubscriber] = [:]
    private var nextSubscriberID: UInt64 = 0
    @exclusivity(unchecked) private var held: [Push] = []
    @exclusivity(unchecked) private var deduplicator = PushDeduplicator()
    /// Reliable seqs accepted into a buffer and not yet taken, with how many buffers hold them.
    @exclusivity(unchecked) private var buffered: [UInt64: Int] = [:]
    @exclusivity(unchecked) private var deferringReliable = false
    private var syncWanted = false
    @exclusivity(unchecked) private var acks: AckBatcher
    private var ackTimer: (any ScheduledWork)?

    private var state: ConnectionState = ConnectionState(phase: .idle, reason: "not started")
    private var observers: [UInt64: StateObserver] = [:]
    private var nextObserverID: UInt64 = 0
    @exclusivity(unchecked) private var stats = ClientStatistics()

    init(loop: EventLoop, configuration: ClientConfiguration) {
        self.loop = loop
        self.configuration = configuration
        self.acks = AckBatcher(maxBatch: configuration.ackBatchSize)
    }

    private func log(_ level: LogRecord.Level, _ message: @autoclosure () -> String) {
        configuration.logger?(LogRecord(level: level, message: message()))
    }

    // MARK: Requests

    /// Registers `call` and suspends until it is answered, fails, or is given up.
    ///
    /// Nonisolated on purpose: the caller suspends on its own executor and the loop only gets a job
    /// that registers the call, so a reply resumes the caller directly — one hop each way, where an
    /// isolated `submit` would also run the caller on the loop before and after it suspended.
    nonisolated func outcome(of call: PendingCall) async -> PendingCall.Outcome {
        await withUnsafeContinuation { continuation in submit(call, continuation) }
    }

    /// Hands the call and its suspended caller to the loop (the first of a batch schedules the drain).
    nonisolated func submit(_ call: PendingCall, _ continuation: PendingCall.Caller) {
        call.submittedCaller = continuation
        if submissions.append(call) {
            loop.execute { self.assumeIsolated { $0.admitSubmissions() } }
        }
    }

    /// The loop's half of ``outcome(of:)``: admits every call submitted since the last pass.
    private func admitSubmissions() {
        submissions.take(into: &submissionScratch)
        let now = deadlines.nanoseconds(at: clock.now)
        for call in submissionScratch {
            guard let caller = call.submittedCaller else {
                assertionFailure("a call reached the inbox without its caller")
                continue
            }
            call.submittedCaller = nil
            admit(call, caller, now: now)
        }
        submissionScratch.removeAll(keepingCapacity: true)
    }

    /// Registers one call; resumes `continuation` exactly once, through the call.
    /// `now` is in nanoseconds from the deadline index's origin.
    private func admit(
        _ call: PendingCall, _ continuation: PendingCall.Caller, now: Int64
    ) {
        // Given up (cancelled) before it got here: the failure was parked on the call.
        if let early = call.earlyFailure ?? (call.isFinished ? CancellationError() : nil) {
            continuation.resume(returning: .failed(early))
            return
        }
        call.continuation = continuation
        call.deadlineNanoseconds = DeadlineBuckets.nanoseconds(at: call.deadline, since: deadlines.origin)
        if let refusal = admissionError(for: call, now: now) {
            if refusal.code == .deadlineExceeded { stats.timeouts += 1 }
            call.complete(.failure(refusal))
            return
        }
        pending.insert(call)
        if configuration.deadlineStrategy.usesHeap { trackDeadline(call) }
        if call.bypassesGate {
            guard let link, link.generation == call.linkGeneration, link.isEstablished else {
                finish(call, .failure(LongLinkError(code: .connectionLost, message: "the link dropped during login")))
                return
            }
            write(call, on: link, now: now)
        } else if let link, link.gateOpen, link.isEstablished {
            write(call, on: link, now: now)
        } else if queue.count >= configuration.offlineQueueLimit {
            finish(
                call,
                .failure(
                    LongLinkError(
                        code: .resourceExhausted,
                        message: "offline queue full (\(configuration.offlineQueueLimit) requests wait for the link)")))
        } else {
            queue.append(call)
        }
    }

    private func admissionError(for call: PendingCall, now: Int64) -> LongLinkError? {
        // Tested before it is bound: binding copied the optional error for every call (about 1%
        // of the loop at 1,024 requests in flight).
        if terminalError != nil { return terminalError }
        if shuttingDown { return LongLinkError(code: .shutdown, message: "the client is shutting down") }
        if now >= call.deadlineNanoseconds {
            return LongLinkError(code: .deadlineExceeded, message: "the deadline passed before the request was sent")
        }
        return nil
    }

    /// The call's deadline passed: fail it.
    ///
    /// No `Cancel` goes out: the request carried its remaining budget in `timeout_ms`, so the
    /// server's own timer ends the handler at the same moment. (With 100,000 calls sharing a
    /// deadline, 100,000 redundant `Cancel` frames would double the work on both sides.)
    @discardableResult
    func expire(_ call: PendingCall) -> Bool {
        guard !call.isFinished else { return false }
        stats.timeouts += 1
        finish(call, .timedOut)
        return true
    }

    /// The caller gave up: fail it and tell the server.
    func cancel(_ call: PendingCall) {
        guard !call.isFinished else { return }
        stats.cancellations += 1
        sendCancelIfWritten(call)
        finish(call, .failure(CancellationError()))
    }

    private func sendCancelIfWritten(_ call: PendingCall) {
        guard case .written(let generation) = call.stage, let link, link.generation == generation, link.end == nil
        else { return }
        send(.cancel(Frame.Cancel(requestID: String(call.id))), on: link)
    }

    /// Removes the call from the books and resumes its caller exactly once.
    private func finish(_ call: PendingCall, _ result: Result<[UInt8], any Error>) {
        finish(call, PendingCall.Outcome(result))
    }

    /// Removes the call from the books and resumes its caller exactly once with `outcome`.
    private func finish(_ call: PendingCall, _ outcome: PendingCall.Outcome) {
        takeOffTheBooks(call)
        if batchingResumes {
            if let caller = call.takeCaller(finishingWith: outcome) { readResumes.append(caller, outcome) }
        } else {
            call.complete(outcome)
        }
        if shuttingDown { finishShutdownIfIdle() }
    }

    /// Removes the call from the offline queue, the pending table and the deadline index.
    private func takeOffTheBooks(_ call: PendingCall) {
        queue.remove(call)
        pending.remove(call)
        if call.deadlineBucket != nil { deadlines.remove(call) }
    }

    // MARK: Deadlines

    private func trackDeadline(_ call: PendingCall) {
        armDeadlineTimer(at: deadlines.insert(measured: call))
    }

    /// Keeps one timer, at the earliest bucket's due time. A later one never moves it; an answered
    /// call does not either (the timer then finds nothing due and moves on to the next one).
    /// `earliest` is in nanoseconds from the deadline index's origin.
    private func armDeadlineTimer(at earliest: Int64) {
        if let armedAt = deadlineTimerAt, armedAt <= earliest { return }
        deadlineTimer?.cancel()
        deadlineTimerAt = earliest
        deadlineTimer = clock.schedule(at: deadlines.instant(atNanoseconds: earliest), on: loop) { [self] in
            assumeIsolated { $0.deadlinesDue() }
        }
    }

    /// The deadline timer fired: fails every call whose bucket is due.
    ///
    /// A mass expiry (``parallelResumeThreshold`` calls or more) does the books first and then
    /// resumes the suspended callers in chunks (``ExpiredCallers``), taken by ``expiryHelpers`` jobs
    /// on the global executor and by the loop itself until none is left. Why: resuming a caller's
    /// cold task is most of an expiry's cost, and it is the runtime's. Spread over several threads
    /// it runs on every core; with the loop among them, the callers keep a fair share of the
    /// machine when another busy thread holds a core (in `bench timeouts`, the server expiring the
    /// same budgets; with two jobs alone they got one core of two). The jobs are queued before any
    /// caller is resumed, so they sit ahead of the callers in the executor's queue. The price:
    /// replies and heartbeats wait while the loop does its share (for 100,000 callers, some tens of
    /// milliseconds, when those calls are already late).
    private func deadlinesDue() {
        deadlineTimer = nil
        deadlineTimerAt = nil
        let due = deadlines.takeDue(at: clock.now)
        let dueCount = due.reduce(0) { $0 + $1.calls.count }
        let resumeInParallel = dueCount >= Self.parallelResumeThreshold
        var handedOver: [PendingCall.Caller] = []
        if resumeInParallel { handedOver.reserveCapacity(dueCount) }
        var resumedHere = 0
        for bucket in due {
            bucket.calls.withUnsafeBufferPointer { calls in
                for (index, call) in calls.enumerated() {
                    // Prefetches a call a few places ahead, so its object (cold, like every call of a
                    // mass expiry) is on its way while this one is done.
                    if index + Self.expiryLookahead < calls.count {
                        Prefetch.object(
                            referencedBy: UnsafeRawPointer(calls.baseAddress! + index + Self.expiryLookahead), lines: 2)
                    }
                    call.deadlineBucket = nil
                    call.deadlineSlot = -1
                    if resumeInParallel {
                        guard !call.isFinished else { continue }
                        stats.timeouts += 1
                        takeOffTheBooks(call)
                        if let caller = call.takeCaller(finishingWith: .timedOut) { handedOver.append(caller) }
                    } else if expire(call) {
                        resumedHere += 1
                    }
                }
            }
        }
        expiredByTimer.add(resumedHere + handedOver.count, ordering: .relaxed)
        expiredCallersResumed.add(resumedHere, ordering: .relaxed)
        if !handedOver.isEmpty {
            let expired = ExpiredCallers(handedOver)
            for _ in 0..<Self.expiryHelpers {
                Task.detached { [self] in
                    expiredCallersResumed.add(expired.resumeChunks(), ordering: .relaxed)
                }
            }
            expiredCallersResumed.add(expired.resumeChunks(), ordering: .relaxed)
        }
        if resumeInParallel, shuttingDown { finishShutdownIfIdle() }
        if let next = deadlines.nextDueNanoseconds() { armDeadlineTimer(at: next) }
    }

    /// From this many calls expiring in one pass, their callers are resumed in parallel.
    static let parallelResumeThreshold = 2_048
    /// How many jobs on the global executor resume a mass expiry's callers beside the loop: one
    /// per core, as many as the executor runs at once (two on the bench machine).
    static let expiryHelpers = EventLoopGroup.onlineCores
    /// How far ahead of the call being expired the deadline pass prefetches (see ``deadlinesDue()``).
    private static let expiryLookahead = 16

    /// `now` is in nanoseconds from the deadline index's origin (read from the clock when nil).
    private func write(_ call: PendingCall, on link: Link, now: Int64? = nil) {
        let remaining = call.deadlineNanoseconds - (now ?? deadlines.nanoseconds(at: clock.now))
        // The budget in whole milliseconds, rounded up, at least 1.
        let milliseconds = max(1, remaining / 1_000_000 + (remaining % 1_000_000 > 0 ? 1 : 0))
        call.stage = .written(link.generation)
        send(on: link) {
            Frame.encodeDelimitedRequest(
                requestNumber: call.id, method: call.method, payload: call.payload,
                timeoutMilliseconds: UInt32(clamping: milliseconds), metadata: call.metadata, into: &$0)
        }
        stats.requestsSent += 1
    }

    private func send(_ frame: Frame, on link: Link) {
        send(on: link) { frame.encodeDelimited(into: &$0) }
    }

    /// Appends one encoded frame to the link's writes.
    private func send(on link: Link, encoding frame: (inout [UInt8]) -> Void) {
        link.connection.write(encoding: frame)
        link.sentSinceTick = true
    }

    private func handleResponse(_ response: Frame.Response) {
        guard let id = Frame.requestNumber(fromID: response.requestID), let call = pending.call(for: id), call.isWritten
        else {
            stats.unknownReplies += 1
            return
        }
        stats.repliesReceived += 1
        if let status = response.status, status.code != .ok {
            // The server gave up on the budget sent in timeout_ms: a timeout like the client's own.
            if status.code == .deadlineExceeded { stats.timeouts += 1 }
            finish(call, .failure(LongLinkError(status: status)))
        } else {
            finish(call, .success(response.payload))
        }
    }

    /// Sends the queue in order (the gate just opened).
    private func drainQueue(on link: Link) {
        while link.gateOpen, link.isEstablished, let call = queue.popFirst() {
            write(call, on: link)
        }
    }

    // MARK: Links

    /// Takes a new connection, sends Hello and waits for Welcome (bounded by the connect timeout).
    func attach(_ connection: Connection, endpoint: Endpoint) async throws -> UInt64 {
        // A shutdown (or terminal error) that landed while the supervisor was connecting: this link
        // must not come up, or nothing would ever close it.
        if let stop = terminalError
            ?? (shuttingDown ? LongLinkError(code: .shutdown, message: "the client is shutting down") : nil)
        {
            connection.close(.immediately, error: stop)
            throw stop
        }
        nextGeneration += 1
        let link = Link(generation: nextGeneration, connection: connection, endpoint: endpoint)
        let generation = link.generation
        self.link = link
        connection.start(
            handler: LinkHandler(core: self, generation: link.generation, maxFrameBytes: configuration.maxFrameBytes))
        let proposed = configuration.heartbeat
        send(
            .hello(
                Frame.Hello(
                    clientID: configuration.clientID, heartbeatMilliseconds: proposed.wireMilliseconds,
                    metadata: configuration.metadata)),
            on: link)
        let welcome = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Frame.Welcome, any Error>) in
            if let end = link.end {
                continuation.resume(throwing: Self.error(for: end))
                return
            }
            link.welcomeWaiter = continuation
            link.handshakeTimer = clock.schedule(at: clock.now.advanced(by: configuration.connectTimeout), on: loop) {
                [self] in
                assumeIsolated { core in
                    core.failHandshake(
                        generation,
                        LongLinkError(code: .connectTimeout, message: "no Welcome within the connect timeout"))
                }
            }
        }
        stats.connects += 1
        if stats.connects > 1 { stats.reconnects += 1 }
        link.heartbeat =
            welcome.heartbeatMilliseconds > 0 ? .milliseconds(Int64(welcome.heartbeatMilliseconds)) : proposed
        scheduleTick(link)
        return link.generation
    }

    private func failHandshake(_ generation: UInt64, _ error: LongLinkError) {
        guard let link, link.generation == generation, let waiter = link.welcomeWaiter else { return }
        link.welcomeWaiter = nil
        link.connection.close(.immediately, error: error)
        waiter.resume(throwing: error)
    }

    var welcome: Frame.Welcome? { link?.welcome }

    /// Login is done: send `Sync`, the acknowledgements that waited, and the queue.
    func openGate(_ generation: UInt64) {
        guard let link, link.generation == generation, link.isEstablished else { return }
        link.synced = true
        send(.sync(Frame.Sync()), on: link)
        syncWanted = false
        let waitingAcks = acks.take()
        if !waitingAcks.isEmpty { sendAck(waitingAcks) }
        guard link.goAway == nil, !shuttingDown else { return }
        link.gateOpen = true
        drainQueue(on: link)
    }

    /// Suspends until the link ends.
    func waitForEnd(_ generation: UInt64) async -> LinkEnd {
        await withCheckedContinuation { continuation in
            guard let link, link.generation == generation else {
                continuation.resume(returning: .closed(nil))
                return
            }
            if let end = link.end {
                continuation.resume(returning: end)
            } else {
                link.endWaiter = continuation
            }
        }
    }

    /// Closes the current link (from the supervisor, after a failed login for example).
    func closeLink(_ generation: UInt64, error: LongLinkError) {
        guard let link, link.generation == generation, link.end == nil else { return }
        link.closing = true
        link.connection.close(.immediately, error: error)
    }

    /// Handles the frames of one read, in order.
    ///
    /// The frames are moved out of `frames` one by one (each slot is left holding an empty frame):
    /// reading each as a copy and then destroying the array cost a reference-count round trip per
    /// field of every reply, about a twentieth of the loop at 1,024 requests in flight.
    func linkReceived(_ generation: UInt64, _ frames: inout [Frame]) {
        guard let link, link.generation == generation, link.end == nil else { return }
        link.receivedSinceTick = true
        link.receivedSinceProbe = true
        // A plain flag per frame: testing the optional Welcome went through its outlined copy.
        var welcomed = link.welcome != nil
        // The replies of one read resume their callers together, after the last frame.
        batchingResumes = true
        defer {
            batchingResumes = false
            let handedOff = readResumes.resumeAll()
            if handedOff > 0 { callersResumedOffLoop.add(handedOff, ordering: .relaxed) }
        }
        for index in frames.indices {
            var frame = Frame.sync(Frame.Sync())
            swap(&frame, &frames[index])
            if !welcomed {
                guard handleFirstFrame(frame, on: link) else { return }
                welcomed = link.welcome != nil
                continue
            }
            switch consume frame {
            case .response(let response): handleResponse(response)
            case .push(let push): handlePush(push)
            case .ping(let ping): send(.pong(Frame.Pong(nonce: ping.nonce)), on: link)
            case .pong(let pong):
                if let ping = link.ping, ping.nonce == pong.nonce {
                    stats.lastRoundTrip = clock.now - ping.sentAt
                    link.ping = nil
                }
            case .goAway(let goAway): handleGoAway(goAway, on: link)
            case .unrecognized: break
            case .hello, .welcome, .request, .cancel, .ack, .sync:
                violate(link, "the server sent a frame only a client sends")
                return
            }
        }
    }

    /// Hello was sent; the first frame must be Welcome or GoAway. False when the link is done.
    private func handleFirstFrame(_ frame: Frame, on link: Link) -> Bool {
        switch frame {
        case .welcome(let welcome):
            guard welcome.version == Frame.protocolVersion else {
                violate(link, "the server speaks protocol version \(welcome.version)")
                return false
            }
            link.welcome = welcome
            link.handshakeTimer?.cancel()
            if let waiter = link.welcomeWaiter {
                link.welcomeWaiter = nil
                waiter.resume(returning: welcome)
            }
            return true
        case .goAway(let goAway):
            handleGoAway(goAway, on: link)
            return false
        case .unrecognized:
            return true
        default:
            violate(link, "the first frame from the server was not Welcome")
            return false
        }
    }

    func linkViolated(_ generation: UInt64, _ failure: WireFormatError) {
        guard let link, link.generation == generation else { return }
        if case .frameTooLarge = failure.kind {
            violate(link, "frame too large: \(failure)", code: .frameTooLarge)
        } else {
            violate(link, "malformed frame: \(failure)")
        }
    }

    private func violate(_ link: Link, _ reason: String, code: LongLinkError.Code = .protocolViolation) {
        log(.warning, "protocol violation by the server: \(reason)")
        let status: StatusCode = code == .frameTooLarge ? .resourceExhausted : .invalidArgument
        send(.goAway(Frame.GoAway(code: status, reason: reason, reconnect: true)), on: link)
        link.closing = true
        link.connection.close(.graceful, error: LongLinkError(code: code, message: reason))
    }

    private func handleGoAway(_ goAway: Frame.GoAway, on link: Link) {
        log(.info, "server sent GoAway (\(goAway.code), reconnect: \(goAway.reconnect)): \(goAway.reason)")
        link.goAway = goAway
        link.gateOpen = false
        // Requests written before stay: the server answers them before it closes.
        if let waiter = link.welcomeWaiter {
            link.welcomeWaiter = nil
            waiter.resume(throwing: Self.error(for: .goAway(goAway)))
        }
        if !pending.contains(where: { if case .written(link.generation) = $0.stage { true } else { false } }) {
            link.closing = true
            link.connection.close(.graceful)
        }
    }

    func linkClosed(_ generation: UInt64, _ error: LongLinkError?) {
        guard let link, link.generation == generation, link.end == nil else { return }
        link.tick?.cancel()
        link.probe?.cancel()
        link.handshakeTimer?.cancel()
        link.gateOpen = false
        let end: LinkEnd
        if shuttingDown {
            end = .shutdown
        } else if let goAway = link.goAway {
            end = .goAway(goAway)
        } else {
            end = .closed(error)
        }
        link.end = end
        if let waiter = link.welcomeWaiter {
            link.welcomeWaiter = nil
            waiter.resume(throwing: Self.error(for: end))
        }
        settleWrittenCalls(of: link)
        if let waiter = link.endWaiter {
            link.endWaiter = nil
            waiter.resume(returning: end)
        }
        if shuttingDown { finishShutdownIfIdle() }
    }

    /// Calls written on a link that ended: sent again after reconnect when that is safe, failed with
    /// `connectionLost` (outcome unknown) otherwise.
    private func settleWrittenCalls(of link: Link) {
        let deduplicates = (link.welcome?.dedupeWindowMilliseconds ?? 0) > 0
        var resend: [PendingCall] = []
        for call in pending.all {
            guard case .written(let generation) = call.stage, generation == link.generation else { continue }
            if !call.bypassesGate, !shuttingDown, terminalError == nil, deduplicates || call.idempotent {
                resend.append(call)
            } else {
                finish(
                    call,
                    .failure(
                        LongLinkError(
                            code: .connectionLost,
                            message: "the link dropped after the request was written; its outcome is unknown")))
            }
        }
        guard !resend.isEmpty else { return }
        stats.resends += resend.count
        resend.sort { $0.id < $1.id }
        queue.prepend(resend)
    }

    static func error(for end: LinkEnd) -> LongLinkError {
        switch end {
        case .closed(let error):
            return error ?? LongLinkError(code: .connectionClosed, message: "the server closed the connection")
        case .goAway(let goAway):
            return LongLinkError(
                code: goAway.reconnect ? .unavailable : .goAway,
                message: "server sent GoAway (\(goAway.code)): \(goAway.reason)")
        case .shutdown:
            return LongLinkError(code: .shutdown, message: "the client is shutting down")
        }
    }

    // MARK: Heartbeat and liveness

    private func scheduleTick(_ link: Link) {
        let interval = link.heartbeat * (inBackground ? configuration.background.heartbeatMultiplier : 1)
        let generation = link.generation
        link.tick = clock.schedule(
            at: clock.now.advanced(by: interval / HeartbeatMonitor.ticksPerInterval), on: loop
        ) { [self] in
            assumeIsolated { $0.tick(generation) }
        }
    }

    /// A heartbeat tick: the monitor decides between nothing, a Ping, and declaring the link dead.
    private func tick(_ generation: UInt64) {
        guard let link, link.generation == generation, link.end == nil else { return }
        let action = link.monitor.tick(
            receivedSinceLastTick: link.receivedSinceTick, sentSinceLastTick: link.sentSinceTick)
        link.receivedSinceTick = false
        link.sentSinceTick = false
        switch action {
        case .declareDead:
            declareDead(link, "nothing received for two heartbeat intervals")
            return
        case .sendPing:
            if link.welcome != nil { sendPing(on: link) }
        case .none:
            break
        }
        scheduleTick(link)
    }

    private func sendPing(on link: Link) {
        nextPingNonce += 1
        link.ping = (nextPingNonce, clock.now)
        send(.ping(Frame.Ping(nonce: nextPingNonce)), on: link)
    }

    private func declareDead(_ link: Link, _ reason: String) {
        stats.deadLinks += 1
        log(.warning, "link to \(link.endpoint) is dead: \(reason)")
        link.closing = true
        link.connection.close(.immediately, error: LongLinkError(code: .connectionLost, message: reason))
    }

    /// Pings now and replaces the link if nothing comes back within the probe timeout.
    private func probeLiveness() {
        guard let link, link.isEstablished, link.probe == nil else { return }
        link.receivedSinceProbe = false
        sendPing(on: link)
        let generation = link.generation
        link.probe = clock.schedule(at: clock.now.advanced(by: configuration.livenessProbeTimeout), on: loop) {
            [self] in
            assumeIsolated { core in
                guard let link = core.link, link.generation == generation else { return }
                link.probe = nil
                if !link.receivedSinceProbe, link.end == nil {
                    core.declareDead(link, "no answer to a liveness probe")
                }
            }
        }
    }

    // MARK: App lifecycle and network

    func networkDidChange() {
        pendingWakeOrResume(.networkChanged)
        probeLiveness()
    }

    func setBackground(_ background: Bool) {
        guard inBackground != background else { return }
        inBackground = background
        if !background {
            pendingWakeOrResume(.networkChanged)
            probeLiveness()
        }
    }

    var pausesReconnection: Bool { inBackground && configuration.background.pausesReconnection }

    /// Waits before the next attempt; ends early on a network change, foreground, or shutdown.
    func waitToRetry(_ delay: Duration?) async -> RetryWake {
        await withCheckedContinuation { continuation in
            if shuttingDown {
                continuation.resume(returning: .shutdown)
                return
            }
            if let wake = pendingWake {
                pendingWake = nil
                continuation.resume(returning: wake)
                return
            }
            retryWaiter = continuation
            if let delay {
                retryTimer = clock.schedule(at: clock.now.advanced(by: delay), on: loop) { [self] in
                    assumeIsolated { $0.wakeRetry(.timer) }
                }
            }
        }
    }

    private func pendingWakeOrResume(_ wake: RetryWake) {
        if retryWaiter != nil {
            wakeRetry(wake)
        } else if wake != .timer {
            pendingWake = wake
        }
    }

    private func wakeRetry(_ wake: RetryWake) {
        retryTimer?.cancel()
        retryTimer = nil
        guard let waiter = retryWaiter else { return }
        retryWaiter = nil
        waiter.resume(returning: wake)
    }

    /// Clears a wake-up that arrived while connected (it concerned the old link).
    func clearPendingWake() {
        if pendingWake == .networkChanged { pendingWake = nil }
    }

    // MARK: Pushes

    /// Registers a consumer; pushes held while nobody listened move to it.
    func addSubscriber(topic: String?) -> PushSubscriber {
        nextSubscriberID += 1
        let loop = self.loop
        let subscriber = PushSubscriber(
            id: nextSubscriberID, topic: topic, limit: configuration.pushBufferLimit,
            onTaken: { [weak self] subscriber in
                guard let core = self else { return }
                loop.execute { core.assumeIsolated { $0.collectTaken(from: subscriber) } }
            },
            onCancelled: { [weak self] subscriber in
                guard let core = self else { return }
                loop.execute { core.assumeIsolated { $0.removeSubscriber(subscriber) } }
            })
        if terminalError != nil || (shuttingDown && link == nil) {
            subscriber.finish()
            return subscriber
        }
        subscribers[subscriber.id] = subscriber
        if !held.isEmpty {
            var keep: [Push] = []
            for push in held {
                if subscriber.matches(push.topic), subscriber.offer(push) { continue }
                keep.append(push)
            }
            held = keep
        }
        if syncWanted { requestSync() }
        return subscriber
    }

    func removeSubscriber(_ subscriber: PushSubscriber) {
        guard subscribers.removeValue(forKey: subscriber.id) != nil else { return }
        collectTaken(from: subscriber)
        let untaken = subscriber.finish()
        guard !untaken.isEmpty else { return }
        for push in untaken { release(push.seq) }
        // Pushes this consumer never took go back to the server's care: a Sync brings them again.
        // Now, if a consumer that wants them is registered already (it may have registered before
        // this one was removed; waiting for the next consumer to arrive left it waiting forever);
        // otherwise when the next consumer arrives.
        if subscribers.values.contains(where: { remaining in untaken.contains { remaining.matches($0.topic) } }) {
            requestSync()
        } else {
            syncWanted = true
        }
    }

    private func release(_ seq: UInt64) {
        guard let count = buffered[seq] else { return }
        buffered[seq] = count > 1 ? count - 1 : nil
    }

    private func handlePush(_ frame: Frame.Push) {
        stats.pushesReceived += 1
        let push = Push(seq: frame.seq, topic: frame.topic, payload: frame.payload)
        // The consumers are walked in place, not filtered into an array: that was an allocation
        // per push on the loop.
        guard push.isReliable else {
            var delivered = false
            for subscriber in subscribers.values where subscriber.matches(push.topic) && subscriber.offer(push) {
                delivered = true
            }
            if !delivered { stats.bestEffortPushesDropped += 1 }
            return
        }
        deduplicator.observeReceived(push.seq)
        if deduplicator.wasDelivered(push.seq) {
            // The app has it; the earlier Ack was lost. Acknowledge again, deliver nothing.
            stats.duplicatePushesDropped += 1
            addAck(push.seq)
            return
        }
        if buffered[push.seq] != nil {
            stats.duplicatePushesDropped += 1
            return
        }
        if deferringReliable {
            stats.reliablePushesDeferred += 1
            return
        }
        if !subscribers.values.contains(where: { $0.matches(push.topic) }) {
            // Nobody reads this topic yet: hold it (bounded). Past the bound it stays with the server,
            // unacknowledged, and the Sync sent when a consumer arrives brings it back in order.
            guard held.count < configuration.pushBufferLimit else {
                stats.reliablePushesDeferred += 1
                syncWanted = true
                return
            }
            held.append(push)
            buffered[push.seq] = 1
            return
        }
        var accepted = 0
        var refused = false
        for subscriber in subscribers.values where subscriber.matches(push.topic) {
            if subscriber.offer(push) { accepted += 1 } else if !subscriber.isFinished { refused = true }
        }
        if accepted > 0 { buffered[push.seq] = accepted }
        if refused { startDeferring() }
    }

    /// A consumer is full: refuse reliable pushes (unacknowledged, so the server keeps them) until
    /// the consumers catch up, then `Sync` brings them back in order.
    private func startDeferring() {
        stats.reliablePushesDeferred += 1
        if !deferringReliable { log(.warning, "push consumer behind: deferring reliable pushes until it catches up") }
        deferringReliable = true
    }

    private func collectTaken(from subscriber: PushSubscriber) {
        let seqs = subscriber.drainTaken()
        for seq in seqs {
            deduplicator.markDelivered(seq)
            buffered[seq] = nil
            addAck(seq)
        }
        stats.pushesDelivered += seqs.count
        if deferringReliable, subscribers.values.allSatisfy({ $0.count < $0.limit / 2 }) {
            deferringReliable = false
            requestSync()
        }
    }

    /// Asks the server to send every unacknowledged push again (now, or once logged in).
    private func requestSync() {
        guard let link, link.isEstablished, link.synced else {
            syncWanted = true
            return
        }
        syncWanted = false
        send(.sync(Frame.Sync()), on: link)
    }

    private func addAck(_ seq: UInt64) {
        switch acks.add(seq) {
        case .none:
            break
        case .armTimer:
            ackTimer = clock.schedule(at: clock.now.advanced(by: configuration.ackDelay), on: loop) { [self] in
                assumeIsolated { core in
                    core.ackTimer = nil
                    let seqs = core.acks.take()
                    if !seqs.isEmpty { core.sendAck(seqs) }
                }
            }
        case .flush(let seqs):
            ackTimer?.cancel()
            ackTimer = nil
            sendAck(seqs)
        }
    }

    private func sendAck(_ seqs: [UInt64]) {
        guard let link, link.isEstablished, link.synced else {
            // No logged-in link: keep them for the next one.
            for seq in seqs { _ = acks.add(seq) }
            return
        }
        send(.ack(Frame.Ack(seqs: seqs)), on: link)
        stats.acksSent += seqs.count
    }

    // MARK: Connection states

    func setState(_ new: ConnectionState) {
        state = new
        log(new.phase == .stopped && new.error != nil ? .error : .info, "\(new)")
        for observer in observers.values { observer.offer(new) }
    }

    var currentState: ConnectionState { state }

    func addObserver() -> StateObserver {
        nextObserverID += 1
        let observer = StateObserver(id: nextObserverID, initial: state)
        if state.phase == .stopped {
            observer.finish()
        } else {
            observers[observer.id] = observer
        }
        return observer
    }

    func removeObserver(_ observer: StateObserver) {
        observers[observer.id] = nil
        observer.finish()
    }

    // MARK: Statistics

    var statistics: ClientStatistics {
        var snapshot = stats
        snapshot.queued = queue.count
        // Every admitted call is written or queued until it is finished (and so removed): no pass
        // over 100,000 calls for a statistics read.
        snapshot.inFlight = pending.count - queue.count
        assert(snapshot.inFlight == pending.all.reduce(0) { $0 + ($1.isWritten ? 1 : 0) })
        return snapshot
    }

    var pendingCount: Int { pending.count }

    // MARK: Shutdown and terminal errors

    /// Graceful: refuse new requests, fail queued ones, let written ones finish within the grace
    /// period, then say GoAway and close.
    func beginShutdown(gracePeriod: Duration) {
        guard !shuttingDown else { return }
        shuttingDown = true
        let error = LongLinkError(code: .shutdown, message: "the client is shutting down")
        for call in pending.all where !call.isWritten {
            finish(call, .failure(error))
        }
        queue.removeAll()
        wakeRetry(.shutdown)
        if pendingWake == nil { pendingWake = .shutdown }
        shutdownTimer = clock.schedule(at: clock.now.advanced(by: gracePeriod), on: loop) { [self] in
            assumeIsolated { $0.completeShutdown() }
        }
        finishShutdownIfIdle()
    }

    private func finishShutdownIfIdle() {
        guard shuttingDown, pending.isEmpty else { return }
        completeShutdown()
    }

    private func completeShutdown() {
        shutdownTimer?.cancel()
        shutdownTimer = nil
        let error = LongLinkError(code: .shutdown, message: "the client shut down")
        for call in pending.all { finish(call, .failure(error)) }
        if let link, link.end == nil, !link.closing {
            link.closing = true
            if link.welcome != nil {
                let remaining = acks.take()
                if !remaining.isEmpty, link.synced { send(.ack(Frame.Ack(seqs: remaining)), on: link) }
                send(.goAway(Frame.GoAway(code: .ok, reason: "client shutting down")), on: link)
            }
            link.connection.close(.graceful)
        } else if let link, let waiter = link.endWaiter {
            link.endWaiter = nil
            waiter.resume(returning: .shutdown)
        }
        wakeRetry(.shutdown)
        finishConsumers()
    }

    /// Ends everything with a terminal error: every waiting caller gets it.
    func terminate(_ error: LongLinkError) {
        guard terminalError == nil else { return }
        terminalError = error
        for call in pending.all { finish(call, .failure(error)) }
        queue.removeAll()
        if let link, link.end == nil, !link.closing {
            link.closing = true
            link.connection.close(.graceful, error: error)
        }
        finishConsumers()
    }

    /// Called when `run()` ends: nothing may wait any more.
    func stopped(_ final: ConnectionState) {
        setState(final)
        for observer in observers.values { observer.finish() }
        observers.removeAll()
        finishConsumers()
        let error = terminalError ?? LongLinkError(code: .shutdown, message: "the client stopped")
        for call in pending.all { finish(call, .failure(error)) }
    }

    private func finishConsumers() {
        for subscriber in subscribers.values { subscriber.finish() }
        subscribers.removeAll()
    }

    var isStopping: Bool { shuttingDown || terminalError != nil }
    var terminal: LongLinkError? { terminalError }
}
