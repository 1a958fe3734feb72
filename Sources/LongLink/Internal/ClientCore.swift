internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// Why a wait before reconnecting ended.
enum RetryWake: Sendable {
    case timer
    case networkChanged
    case shutdown
}

/// The client's state, owned by one actor that runs on the client's event loop: the pending
/// requests with their callers' continuations, the links, heartbeats, pushes and
/// acknowledgements.
///
/// The actor's executor is the event loop of its connections, so frames that arrive are handled
/// where they are read (`assumeIsolated` from the connection's callbacks), without a thread hop,
/// and the frames written in one loop pass go out in one system call. The decisions live in
/// plain values the actor asks and then obeys: ``ClientStateMachine`` (the links' lifecycle, the
/// pending requests and their routes, pushes, acks and consumers; its actions are performed by
/// `run(_:)`) and ``SubscriptionBook`` (what each login replays). The facets: `+Requests`, `+Link`, `+Migration`, `+Heartbeat`,
/// `+Compression`, `+Pushes`, `+Lifecycle`, `+Relogin`, `+Subscriptions`, `+CleanSlate`, `+Credentials`.
actor ClientCore {
    nonisolated let loop: EventLoop
    nonisolated let configuration: ClientConfiguration
    nonisolated let clock: LoopClock

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        loop.asUnownedSerialExecutor()
    }

    /// The I/O side of one connection: the socket, its timers and the tasks waiting on it.
    /// Its lifecycle is decided by ``LinkStateMachine``.
    final class Link {
        let generation: UInt64
        let connection: Connection
        let endpoint: Endpoint
        /// The session it was made in (``Shared/session``): what it brings after that session
        /// ended belongs to the last user, and is ignored.
        let session: UInt64
        /// The server's `Welcome`, for its settings (whether it came yet is the machine's to say:
        /// ``LinkStateMachine/awaitsWelcome(_:)``).
        var welcome: Frame.Welcome?
        var heartbeat: Duration = .seconds(15)
        /// The largest frame the server accepts (its Welcome's `max_frame_bytes`, bounded).
        var maxFrameBytes = Frame.defaultMaxFrameBytes
        /// The supervisor, waiting for this link's end (its timer: ``ClientTimer/supervisorWake(_:)``).
        var endWaiter: CheckedContinuation<LinkWait, Never>?
        /// Both sides agreed to compress payloads on this link.
        var compresses = false
        /// Adaptive heartbeat (`+AdaptiveHeartbeat`): the learned interval this link's heartbeat
        /// is (nil: another, so nothing it shows is reported), the idle `Ping` awaiting its answer,
        /// and the proposal in flight.
        var learnedInterval: Duration?
        var idlePing: UInt64?
        var proposal: (nonce: UInt64, interval: Duration)?

        init(generation: UInt64, connection: Connection, endpoint: Endpoint, session: UInt64) {
            self.generation = generation
            self.connection = connection
            self.endpoint = endpoint
            self.session = session
        }

        /// Takes the bounded settings of the server's `Welcome`: heartbeat, frame size, and whether
        /// payloads are compressed (the client offered it, `offeredCompression`). Its in-flight
        /// limit is the machine's (``ClientStateMachine/welcomed(_:maxInFlight:)``).
        func adopt(_ welcome: Frame.Welcome, proposedHeartbeat: Duration, offeredCompression: Bool) {
            heartbeat = ServerBounds.heartbeat(offered: welcome.heartbeatMilliseconds, proposed: proposedHeartbeat)
            maxFrameBytes = ServerBounds.maxFrameBytes(offered: welcome.maxFrameBytes)
            compresses = offeredCompression && PayloadCompressor.advertisesZlib(welcome.metadata)
        }

        /// Ends the supervisor's wait on this link, if it waits (its wake timer is the core's:
        /// ``ClientCore/endWait(_:_:)``).
        fileprivate func resumeEndWaiter(_ wait: LinkWait) {
            guard let waiter = endWaiter else { return }
            endWaiter = nil
            waiter.resume(returning: wait)
        }
    }

    // MARK: Links

    /// Every link the client holds, by generation: the current one (kept once it ended, until the
    /// next, for the supervisor's wait), a migration's successor and the retiring links. What each
    /// is, ``LinkStateMachine/role(of:)`` says.
    var links: [UInt64: Link] = [:]
    /// Every decision: the links' lifecycle, the requests, the pushes and their consumers.
    var machine: Machine
    typealias Machine = ClientStateMachine<PendingRequest.Caller, PushSubscriber>

    // MARK: Timers, the supervisor's view, pushes, observation

    /// Every timer armed, by id, each with the token its firing must match (a timer replaced or
    /// cancelled as it fires is ignored).
    var timers = TimerTable()
    /// The tasks and streams waiting on the core, each resumed once.
    var waiters = Waiters()
    nonisolated let shared: Shared

    /// The response cache (in the request layer; the core invalidates it on pushes and empties it
    /// when a session ends).
    nonisolated var responseCache: ResponseCache { shared.responseCache }
    /// Identical calls in flight sharing one request (in the request layer; the core ends every
    /// flight when a session ends).
    nonisolated var coalescer: Coalescer { shared.coalescer }

    /// The core's scheduled work by ``ClientTimer``, each cancelled when its reason goes away.
    struct TimerTable {
        var armed: [ClientTimer: (work: any ScheduledWork, token: UInt64)] = [:]
        var nextToken: UInt64 = 0
    }

    /// The tasks and streams waiting on the core; what they wait for, the machine decides.
    struct Waiters {
        /// The supervisor, waiting before it reconnects (`+Heartbeat`).
        var retry: CheckedContinuation<RetryWake, Never>?
        /// The supervisor, waiting for the app's next login after a session ended (`+Relogin`).
        var login: CheckedContinuation<LoginStep?, Never>?
        /// The app's next login step until the supervisor takes it, with the `login(_:)` call
        /// waiting for that.
        var pendingLogin: (id: UInt64, step: LoginStep, caller: CheckedContinuation<Void, any Error>)?
        /// The streams of connection states, by id.
        var observers: [UInt64: StateObserver] = [:]
        var nextObserverID: UInt64 = 0
        /// Where each run-time subscription's outcomes go (`+Subscriptions`).
        var subscriptionSinks: [UInt64: SubscriptionSink] = [:]
        /// The subscriptions keeper, waiting for work.
        var subscriptionKeeper: CheckedContinuation<[SubscriptionWork]?, Never>?
        /// `run()` ended: the keeper gets no more work.
        var keeperStopped = false
        /// The credential refresh under way (`+Credentials`), at most one.
        var credentialRefresh: Task<Void, Never>?
    }

    /// What callers read and use without a hop to the loop.
    final class Shared: Sendable {
        /// The response cache (``responseCache``).
        let responseCache: ResponseCache
        /// Identical calls in flight sharing one request (``coalescer``).
        let coalescer: Coalescer
        let nextSubscriberID = Atomic<UInt64>(0)
        /// The client's request ids: its calls', its login's and its credential refreshes' (the
        /// server de-duplicates by them), from a random start.
        let nextRequestID = Atomic<UInt64>(UInt64.random(in: 1...(UInt64.max / 2)))
        /// Whether the latest link agreed to compression: callers compress a request's payload
        /// ahead only then (the link that writes it decides which form goes out).
        let linkCompresses = Atomic<Bool>(false)
        /// The number of the current session, one more at each end of a session and each login
        /// after one (``ClientCore/clearSession(_:)``): calls, streams and subscriptions take it
        /// when the app makes them, and the core refuses those of a session that ended, so that
        /// nothing made for one user runs as the next.
        let session = Atomic<UInt64>(0)

        init(configuration: ClientConfiguration) {
            responseCache = ResponseCache(configuration: configuration.responseCache, clock: configuration.clock)
            coalescer = Coalescer(
                callLimit: configuration.coalescedCallLimit, byteLimit: configuration.coalescedCallBytes)
        }
    }

    init(loop: EventLoop, configuration: ClientConfiguration) {
        self.loop = loop
        self.configuration = configuration
        self.clock = LoopClock(configuration.clock)
        self.machine = ClientStateMachine(
            book: RequestBook(
                queueLimit: configuration.offlineQueueLimit, queueByteLimit: configuration.offlineQueueBytes),
            ledger: PushLedger(
                holdLimit: configuration.pushBufferLimit, holdByteLimit: configuration.pushBufferBytes,
                maxBatch: configuration.ackBatchSize),
            subscriptions: SubscriptionBook(static: configuration.subscriptions, backoff: configuration.backoff),
            origin: configuration.clock.now)
        self.machine.leaveAtLoadPermille = configuration.balancing.migration.leaveAtLoadPermille
        self.machine.credentials = configuration.credentials.map {
            CredentialSchedule(lead: $0.lead, jitter: $0.jitter, backoff: $0.backoff)
        }
        self.shared = Shared(configuration: configuration)
    }

    /// A new request id (``Shared/nextRequestID``).
    nonisolated func makeRequestID() -> UInt64 {
        shared.nextRequestID.add(1, ordering: .relaxed).newValue
    }

    func log(
        _ level: LogRecord.Level, _ message: @autoclosure () -> String,
        metadata: @autoclosure () -> [String: String] = [:]
    ) {
        configuration.logger?(LogRecord(bounded: level, message(), metadata: metadata()))
    }

    /// Runs `body` on the core from any thread, without waiting for it.
    nonisolated func onLoop(_ body: @escaping @Sendable (isolated ClientCore) -> Void) {
        loop.execute { self.assumeIsolated(body) }
    }

    /// Performs what the machine decided, in order.
    func run(_ actions: [Machine.Action]) {
        for action in actions { run(action) }
    }

    /// Performs what the machine decided: the one funnel from its decisions to the sockets.
    func run(_ action: Machine.Action) {
        switch action {
        case .drainQueue(let generation):
            if let link = link(generation) { drainQueue(on: link) }
        case .closeDrained(let generation):
            link(generation)?.connection.close(.graceful)
        case .retire(let generation):
            guard let old = link(generation) else { return }
            send(.goAway(Frame.GoAway(code: .ok, reason: "moved to another link")), on: old)
            old.connection.close(.graceful)
        case .pushes(let action):
            perform(action)
        case .send(let frame, let generation):
            if let link = link(generation) { send(frame, on: link) }
        case .resume(let entry, let result):
            resume(entry.caller, of: entry.request, with: result)
        case .completeShutdown:
            completeShutdown()
        case .writtenRequestEnded(let generation):
            if let action = machine.writtenRequestEnded(on: generation) { run(action) }
        case .welcomed(let generation, let welcome):
            links[generation]?.welcome = welcome
        case .close(let generation, let mode, let error):
            link(generation)?.connection.close(mode, error: error)
        case .tellGoingAway(let generation, let goAway):
            if let link = link(generation) { tellGoingAway(link, goAway) }
        case .wakeSupervisor(let generation, let wait):
            if let link = links[generation] { endWait(link, wait) }
        case .forget(let generation):
            links[generation] = nil
        case .refreshCredential(let generation, let attempt, let expiresAt):
            refreshCredential(generation, attempt: attempt, expiresAt: expiresAt)
        case .log(let level, let message):
            log(level, message)
        case .schedule(let timer, let instant):
            schedule(timer, at: instant)
        case .cancel(let timer):
            cancelTimer(timer)
        case .sendPing(let generation):
            if let link = link(generation) { sendPing(on: link) }
        case .wakeRetry(let wake):
            wakeRetry(wake)
        case .probeLiveness:
            probeLiveness()
        case .nudgeSubscriptions:
            nudgeSubscriptions()
        case .endConsumers(let reason):
            finishConsumers(reason)
        case .endLoginWaits:
            endLoginWaits()
        case .linkDead(let generation, let reason):
            if let link = link(generation) {
                heartbeatLinkLost(link, error: LongLinkError(code: .connectionLost, message: reason))
            }
            log(.warning, "link to \(links[generation].map { "\($0.endpoint)" } ?? "?") is dead: \(reason)")
        }
    }

    /// Arms `timer` to fire at `instant`, replacing it if armed.
    func schedule(_ timer: ClientTimer, at instant: ContinuousClock.Instant) {
        timers.armed[timer]?.work.cancel()
        timers.nextToken += 1
        let token = timers.nextToken
        let work = clock.schedule(at: instant, on: loop) { [self] in
            assumeIsolated { $0.fired(timer, token: token) }
        }
        timers.armed[timer] = (work, token)
    }

    /// Disarms `timer`, if armed.
    func cancelTimer(_ timer: ClientTimer) {
        timers.armed.removeValue(forKey: timer)?.work.cancel()
    }

    /// `timer` fired: what it was armed for happens, unless it was replaced or cancelled meanwhile.
    private func fired(_ timer: ClientTimer, token: UInt64) {
        guard timers.armed[timer]?.token == token else { return }
        timers.armed[timer] = nil
        switch timer {
        case .tick(let generation): tick(generation)
        case .probe(let generation): probeTimedOut(generation)
        case .answer(let generation): answerTimedOut(generation)
        case .supervisorWake(let generation):
            guard let link, link.generation == generation else { return }
            endWait(link, .reprobe)
        case .ack: run(machine.ackTimerFired())
        case .deadline: deadlinesDue()
        case .shutdown: completeShutdown()
        case .retry: wakeRetry(.timer)
        case .subscriptionRetry: nudgeSubscriptions()
        case .credential: credentialTimerFired()
        }
    }

    /// Ends the supervisor's wait on `link`, if it waits, and its wake timer.
    func endWait(_ link: Link, _ wait: LinkWait) {
        cancelTimer(.supervisorWake(link.generation))
        link.resumeEndWaiter(wait)
    }

    /// Tells the supervisor the server is going away: now if it waits, else on its next wait.
    func tellGoingAway(_ link: Link, _ goAway: Frame.GoAway) {
        if link.endWaiter == nil {
            machine.keepGoingAway(link.generation, goAway)
        } else {
            endWait(link, .goingAway(goAway))
        }
    }

    /// Appends one frame to the link's writes (flushed with the others of this loop pass).
    func send(_ frame: Frame, on link: Link) {
        link.connection.write(encoding: { frame.encodeDelimited(into: &$0) })
        machine.wrote(on: link.generation)
        if case .request = frame { requestWritten(on: link) }
    }

    /// The current link (also once it ended, until the next one).
    var link: Link? { machine.links.latest.flatMap { links[$0] } }

    /// The current link if it has not ended.
    var liveLink: Link? {
        guard let link, !machine.hasEnded(link.generation) else { return nil }
        return link
    }

    /// Forgets the last current link once it ended (a new one took its place).
    func forgetEndedLink() {
        if let ended = machine.lastEnd?.generation { links[ended] = nil }
    }

    /// The link of `generation` (the current one, a successor or a retiring one) if it has not ended.
    func link(_ generation: UInt64) -> Link? {
        guard let link = links[generation], !machine.hasEnded(generation) else { return nil }
        return link
    }
}
