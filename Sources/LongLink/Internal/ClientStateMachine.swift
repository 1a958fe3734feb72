internal import LongLinkTransport
internal import LongLinkWire

/// The client's decisions in one value: the lifecycle of every link (``LinkStateMachine``), the
/// pending requests and where each goes (``RequestBook``) with their deadlines, and every push
/// from arrival to acknowledgement with the consumers that take them (``PushLedger``); beside
/// them, each frame a link reads, each link's liveness and end, the supervisor's wakes, and the
/// state the relogin, the subscriptions keeper and the app's observers read (the relogin's and the
/// logout's decisions are the core's still).
///
/// Each method is an event and returns what the core must do; the core (``ClientCore``) owns the
/// sockets, the timers and the waiting tasks, and performs the actions in one funnel
/// (`ClientCore.run(_:)`). Generic over the suspended `Caller` of a request and the push
/// `Consumer`, so that tests and the fuzzer drive it with plain values, without sockets or
/// continuations. Facets: `+Requests` (admission, the queue, how a request's end moves its link),
/// `+Links` (a link from attach to close, and the shutdown), `+Deadlines` (the one deadline timer),
/// `+Subscriptions` (the keeper's work), `+Frames` (each frame a link reads), `+Liveness` (the
/// heartbeat and the probe), `+Consumers` (a consumer's start and what it hands over),
/// `+Supervision` (the app's lifecycle and network events), `+Credentials` (the credential's
/// refreshes and expiry). The core's timers are asked for by id (``ClientTimer``).
struct ClientStateMachine<Caller, Consumer> {
    /// What the core does after an event of this machine.
    enum Action {
        /// Write queued requests on the open link of this generation while it takes them
        /// (``dequeue(writingOn:writable:)``).
        case drainQueue(UInt64)
        /// Nothing written on the draining link of this generation waits for a reply any more:
        /// close it gracefully (the server said `GoAway` and would otherwise hold it, gate shut).
        case closeDrained(UInt64)
        /// Nothing written on the retiring link of this generation waits for a reply any more:
        /// say `GoAway` there and close it.
        case retire(UInt64)
        /// What the push ledger decided (acks, their timer, a `Sync`).
        case pushes(PushLedger<Consumer>.Action)
        /// Write this frame on the link of this generation, if it has not ended.
        case send(Frame, on: UInt64)
        /// Resume the caller of this request, taken off the books, with its result (exactly once).
        case resume(RequestBook<Caller>.Entry, Result<[UInt8], any Error>)
        /// The shutdown waited for the last request, which just ended: it completes now.
        case completeShutdown
        /// A request written on this link ended while a shutdown completed: what its end does to
        /// the link is asked only now (``writtenRequestEnded(on:)``), after the shutdown changed it.
        case writtenRequestEnded(UInt64)
        /// The handshake of this link completed with this `Welcome`: the core takes its settings.
        case welcomed(UInt64, Frame.Welcome)
        /// Close this link's connection this way, with this error (the transport then reports it
        /// closed, ``linkClosed(_:error:serverWindow:)``).
        case close(UInt64, CloseMode, error: LongLinkError?)
        /// Arm this timer to fire at this instant (replacing it if armed).
        case schedule(ClientTimer, at: ContinuousClock.Instant)
        /// Disarm this timer, if armed.
        case cancel(ClientTimer)
        /// Send a heartbeat `Ping` on this link (the core draws its nonce: ``pingSent(on:nonce:at:)``).
        case sendPing(UInt64)
        /// This link is dead, for this reason (the core logs it with the link's endpoint).
        case linkDead(UInt64, String)
        /// End the supervisor's wait before reconnecting, with this.
        case wakeRetry(RetryWake)
        /// Probe the current link's liveness (``probeLiveness(_:now:timeout:)``).
        case probeLiveness
        /// The subscriptions keeper looks for work (``subscriptionsDue(now:)``).
        case nudgeSubscriptions
        /// The server of this link goes away and asks to be left: tell the supervisor now if it
        /// waits on the link, else on its next wait.
        case tellGoingAway(UInt64, Frame.GoAway)
        /// End the supervisor's wait on this link, if it waits, with this (also on a link that
        /// ended: the end is what it is told).
        case wakeSupervisor(UInt64, LinkWait)
        /// This side link closed: the core lets go of its connection.
        case forget(UInt64)
        /// Ask the credential provider for a new credential and send it as the refresh request on
        /// this link, as this attempt; the credential in force expires at this instant (`+Credentials`).
        case refreshCredential(UInt64, attempt: UInt64, expiresAt: ContinuousClock.Instant)
        /// Log this.
        case log(LogRecord.Level, String)
        /// End every consumer with this error (``removeAllConsumers()``, asked when performed: acks
        /// performed before may hand seqs back to the ledger, which then starts again as new).
        case endConsumers(LongLinkError)
        /// End the app's and the supervisor's waits for a login (the client shuts down).
        case endLoginWaits
    }

    /// The lifecycle of every link the client holds (`+Migration` for the successor and the
    /// retiring links).
    var links = LinkStateMachine()
    /// The pending requests: changed only through this machine, so that every route and every end
    /// of a request is decided here.
    var book: RequestBook<Caller>
    /// Every push's state from arrival to acknowledgement, and the consumers by the topics they want.
    var ledger: PushLedger<Consumer>
    /// Only with ``DeadlineStrategy/deadlineHeap``: every pending request's deadline (`+Deadlines`).
    var deadlines: DeadlineIndex
    /// When the one deadline timer fires, if it is armed.
    var deadlineTimerAt: ContinuousClock.Instant?
    /// Consumers that pushes of the current read were buffered for, with tasks waiting: woken once
    /// the read is handled, each once (see ``PushSubscriber/offer(_:wakeLater:)``).
    var consumersToWake: [Consumer] = []
    /// The subscriptions kept entered across links, replayed at each login.
    var subscriptions: SubscriptionBook
    /// Leave requests of subscriptions given up before their first reply, for the keeper to send.
    var subscriptionLeaves: [Subscription] = []
    /// What the supervisor looks at, set by the app's calls.
    var supervision = Supervision()
    /// When the session's credential is refreshed and when it expires (`+Credentials`); nil
    /// without ``ClientConfiguration/credentials``.
    var credentials: CredentialSchedule?
    /// The bookkeeping of logging in again after a session ended for good.
    var relogin = Relogin()
    /// The connection state the app observes.
    var connectionState = ConnectionState(phase: .idle, reason: "not started")
    /// The client's counters (``LongLinkClient/statistics``).
    var stats = ClientStatistics()
    /// The most requests written and unanswered at once on each welcomed link (its `Welcome`'s
    /// `max_in_flight`; absent: no limit).
    var inFlightLimits: [UInt64: Int] = [:]
    /// The heartbeat's `Ping` awaiting its `Pong` on each link, to measure the round trip.
    var pings: [UInt64: (nonce: UInt64, sentAt: ContinuousClock.Instant)] = [:]
    /// The load (per mille) a server reports at which the client leaves it, when it has somewhere
    /// else to go (``Balancing/Migration/leaveAtLoadPermille``).
    var leaveAtLoadPermille = Int.max
    /// What each link read and wrote lately, for its heartbeat and probe (`+Liveness`).
    var activity: [UInt64: LinkActivity] = [:]
    /// When the grace period of a shutdown under way ends; nil otherwise.
    var shutdownDeadline: ContinuousClock.Instant?
    /// How the last current link ended: the core keeps that link, ended, until the next one, for
    /// the supervisor's wait (only a current link is kept once it ended).
    var lastEnd: (generation: UInt64, end: LinkEnd)?
    /// A `GoAway` asking to reconnect elsewhere that came while the supervisor was not waiting on
    /// the current link: its next wait there returns it, so that it moves rather than reconnects
    /// after the close.
    var goingAway: (generation: UInt64, goAway: Frame.GoAway)?

    /// A machine with these bounds; deadlines count from `origin`.
    init(
        book: RequestBook<Caller>, ledger: PushLedger<Consumer>,
        subscriptions: SubscriptionBook = SubscriptionBook(static: [], backoff: Backoff()),
        origin: ContinuousClock.Instant = .now
    ) {
        self.book = book
        self.ledger = ledger
        self.subscriptions = subscriptions
        self.deadlines = DeadlineIndex(origin: origin)
    }

    // MARK: What the core reads

    /// The current link's phase.
    var phase: LinkStateMachine.Phase { links.phase }
    /// A graceful shutdown has begun.
    var shuttingDown: Bool { links.shuttingDown }
    /// The session ended for good with this error (until the app logs in again).
    var terminalError: LongLinkError? { links.terminalError }
    /// Shutting down, or the session ended for good.
    var isStopping: Bool { links.isStopping }

    /// The most requests written and unanswered at once on the link of `generation`.
    func inFlightLimit(_ generation: UInt64) -> Int {
        inFlightLimits[generation] ?? .max
    }

    /// How the link of `generation` ended, if it did and is the last current link.
    func end(of generation: UInt64) -> LinkEnd? {
        lastEnd?.generation == generation ? lastEnd?.end : nil
    }

    /// Whether the link of `generation` ended (as the last current link): ``end(of:)`` without
    /// copying the end out, for the checks on every frame and every call.
    func hasEnded(_ generation: UInt64) -> Bool {
        lastEnd?.generation == generation
    }

    /// The server of the current link of `generation` goes away: the supervisor learns it on its
    /// next wait there (``takeGoingAway(_:)``).
    mutating func keepGoingAway(_ generation: UInt64, _ goAway: Frame.GoAway) {
        goingAway = (generation, goAway)
    }

    /// The `GoAway` kept for the supervisor's next wait on `generation`, once.
    mutating func takeGoingAway(_ generation: UInt64) -> Frame.GoAway? {
        guard let kept = goingAway, kept.generation == generation else { return nil }
        goingAway = nil
        return kept.goAway
    }
}
