internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// A request copy waiting in the de-duplication window for an execution's result.
struct DedupeWaiter: Sendable {
    let connection: ServerConnection
    let requestID: String
    let token: UInt64
}

/// One execution in the server's de-duplication window.
typealias DedupeRun = DedupeWindow<DedupeWaiter>.Run

/// The copies of a request waiting for one execution.
typealias DedupeWaiters = DedupeWindow<DedupeWaiter>.Waiters

/// The state every connection of one server shares: configuration, routes, the push store, the
/// de-duplication window, the principal registry and the counters.
final class ServerCore: Sendable {
    let configuration: ServerConfiguration
    let router: Router
    /// Feeds ``statistics`` to ``ServerConfiguration/metrics``; nil without a sink.
    let metricsReporter: MetricsReporter?
    /// The streams of ``LongLinkServer/sessionEvents()``.
    let sessionEvents: SessionEventHub
    /// Where reliable pushes are kept: the server's own store or a fleet's shared one, spoken to
    /// through one interface.
    let pushes: any PushStore
    /// ``pushes`` when it answers at once (an ``InMemoryPushStore``): the pump, the acks and
    /// ``LongLinkServer/push(to:topic:payload:)`` call it on the spot, without a task. nil for any
    /// other store (on disk, a round trip away).
    let immediatePushes: (any ImmediatePushStore)?
    /// The de-duplication window beyond this server's memory (a fleet's, a file's); nil: only the
    /// server's own window.
    let sharedDedupe: (any DedupeStore)?
    let counters: ServerCounters
    /// Writes this server's sessions to a push store that shares presence; nil for any other.
    let presence: PresenceKeeper?
    /// ``ServerConfiguration/clock``, scheduling on the connections' loops.
    let clock: LoopClock
    let dedupe: Locked<DedupeTable>
    /// How the shared stores' calls are made again after a failure that passes, and the time they
    /// wait by (tests replace the timing, so that they do not wait).
    let storeRetry = Locked((policy: StoreRetry(), timing: StoreRetry.Timing.system))

    private struct Registry {
        var all: [UInt64: ServerConnection] = [:]
        /// Keyed by the name's bytes (see ``PrincipalKey``).
        var byPrincipal: [PrincipalKey: [UInt64: ServerConnection]] = [:]
        var emptyWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiterID: UInt64 = 0
        var shuttingDown = false
        /// TLS handshakes under way: each holds a descriptor and an SSL object, so they count
        /// against the connection limit too.
        var pendingHandshakes = 0
    }

    private let registry = Locked(Registry())

    /// A server on `stores`.
    init(configuration: ServerConfiguration, router: Router, stores: ServerStores) {
        self.configuration = configuration
        self.pushes = stores.pushes
        self.sharedDedupe = stores.dedupe
        self.immediatePushes = stores.pushes as? any ImmediatePushStore
        let counters = ServerCounters()
        self.counters = counters
        self.presence =
            stores.pushes.sharesPresence
            ? PresenceKeeper(
                store: stores.pushes, serverID: configuration.serverID, lease: configuration.presenceLease,
                counters: counters)
            : nil
        self.clock = LoopClock(configuration.clock)
        self.loops = (configuration.eventLoopGroup ?? .shared).loops
        // The metrics outermost: a call an interceptor refused is counted with its status.
        let intercepted = router.intercepted()
        self.router = configuration.metrics.map { intercepted.instrumented(with: $0) } ?? intercepted
        self.metricsReporter = configuration.metrics.map { MetricsReporter(sink: $0) }
        self.sessionEvents = SessionEventHub(limit: configuration.sessionEventBuffer)
        self.dedupe = Locked(
            DedupeTable(
                window: DedupeWindow(
                    window: configuration.dedupeWindow, limits: DedupeLimits(configuration), origin: dedupeOrigin),
                orphans: OrphanedExecutions(
                    maxPerClient: configuration.maxOrphanedExecutionsPerClient,
                    maxTotal: configuration.maxOrphanedExecutions)))
    }

    /// The de-duplication window's time line starts here (see ``dedupeTime(_:)``).
    private let dedupeOrigin = ContinuousClock.now

    /// `instant` on the de-duplication window's time line, read outside its lock.
    func dedupeTime(_ instant: ContinuousClock.Instant) -> Int64 {
        DedupeWindow<DedupeWaiter>.time(instant, since: dedupeOrigin)
    }

    var dedupeEnabled: Bool { configuration.dedupeWindow > .zero }

    /// The counters, with what the de-duplication window holds and has refused.
    var statistics: ServerStatistics {
        var statistics = counters.snapshot
        dedupe.withLock { table in
            statistics.dedupeEntries = table.window.count
            statistics.dedupeStoredBytes = table.window.storedBytes
            statistics.dedupeRefusals = table.window.refusals
            statistics.dedupeRepliesNotKept = table.window.repliesNotKept
        }
        statistics.sessionEventsDropped = sessionEvents.dropped.load(ordering: .relaxed)
        return statistics
    }

    var isShuttingDown: Bool { registry.withLock { $0.shuttingDown } }

    /// The load sent in `Welcome` and every `Pong`, 0 to 1000: the application's own figure when
    /// it supplies one, else the largest of three shares: open connections of
    /// ``ServerConfiguration/maxConnections``, running handlers of
    /// ``ServerConfiguration/handlersAtFullLoad``, and the busiest event loop's busy time over the
    /// last second.
    var loadPermille: UInt32 {
        if let reporter = configuration.loadReporter { return min(1000, reporter()) }
        let open = Double(counters.openConnections.load(ordering: .relaxed)) / Double(configuration.maxConnections)
        let running =
            Double(counters.handlersRunning.load(ordering: .relaxed)) / Double(configuration.handlersAtFullLoad)
        let busy = loopBusyShare()
        return UInt32((min(1, max(open, running, busy)) * 1000).rounded())
    }

    let loops: [EventLoop]
    private let gauge = Locked(LoadGauge())

    private func loopBusyShare() -> Double {
        let busy = loops.map(\.busyTime)
        let now = ContinuousClock.now
        return gauge.withLock { $0.sample(busy: busy, at: now) }
    }

    // MARK: Connections

    /// Reserves a place for a TLS handshake about to start, if one is free under both
    /// ``ServerConfiguration/maxPendingHandshakes`` and ``ServerConfiguration/maxConnections``
    /// (open connections and pending handshakes together); a refused socket is closed at once.
    func admitHandshake() -> Bool {
        let admitted = registry.withLock { registry -> Bool in
            guard !registry.shuttingDown, registry.pendingHandshakes < configuration.maxPendingHandshakes,
                registry.all.count + registry.pendingHandshakes < configuration.maxConnections
            else { return false }
            registry.pendingHandshakes += 1
            return true
        }
        if admitted {
            counters.tlsHandshakesPending.increment()
        } else {
            counters.rejectedConnections.increment()
        }
        return admitted
    }

    /// A handshake admitted by ``admitHandshake()`` ended (established, failed or timed out).
    func handshakeEnded() {
        registry.withLock { $0.pendingHandshakes -= 1 }
        counters.tlsHandshakesPending.increment(by: -1)
    }

    /// Called on the accepted connection's event loop.
    func accept(_ connection: Connection) {
        let session = ServerConnection(connection: connection, core: self)
        let admitted = registry.withLock { registry -> Bool in
            guard !registry.shuttingDown, registry.all.count < configuration.maxConnections else { return false }
            registry.all[connection.id] = session
            return true
        }
        if admitted {
            counters.acceptedConnections.increment()
            counters.openConnections.increment()
            session.start()
        } else {
            counters.rejectedConnections.increment()
            session.reject()
        }
    }

    func unregister(_ session: ServerConnection, principal: String?, reason: SessionEndReason) {
        let (waiters, removed) = registry.withLock {
            registry -> ([CheckedContinuation<Bool, Never>], (present: Bool, last: Bool)?) in
            guard registry.all.removeValue(forKey: session.connection.id) != nil else { return ([], nil) }
            let removed = principal.map { Self.remove(session, principal: $0, from: &registry) }
            guard registry.all.isEmpty else { return ([], removed) }
            defer { registry.emptyWaiters.removeAll() }
            return (Array(registry.emptyWaiters.values), removed)
        }
        counters.openConnections.increment(by: -1)
        if let principal, let removed {
            if removed.present { sessionEnded(session, principal: principal, reason: reason) }
            if removed.last { refreshObservation(of: principal) }
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Takes a session that is going away out of its principal's connections at once, while it
    /// still drains and lingers (it stays among the open connections until its socket closes):
    /// a kick, an exclusive login or a push must not find a session that has been told to leave.
    func detach(_ session: ServerConnection, principal: String, reason: SessionEndReason) {
        let removed = registry.withLock { Self.remove(session, principal: principal, from: &$0) }
        if removed.present { sessionEnded(session, principal: principal, reason: reason) }
        if removed.last { refreshObservation(of: principal) }
    }

    func rebind(_ session: ServerConnection, from old: String?, to new: String) {
        let bound = registry.withLock { registry -> (removed: (present: Bool, last: Bool)?, arrived: Bool)? in
            guard registry.all[session.connection.id] != nil else { return nil }
            let removed = old.map { Self.remove(session, principal: $0, from: &registry) }
            let key = PrincipalKey(new)
            let arrived = registry.byPrincipal[key] == nil
            registry.byPrincipal[key, default: [:]][session.connection.id] = session
            return (removed, arrived)
        }
        guard let bound else { return }
        if let old, let removed = bound.removed {
            if removed.present { sessionEnded(session, principal: old, reason: .rebound) }
            if removed.last { refreshObservation(of: old) }
        }
        if bound.arrived { refreshObservation(of: new) }
        presence?.began(new, connectionID: session.connection.id)
        if sessionEvents.isObserved {
            sessionEvents.publish(
                SessionEvent(
                    principal: new, clientID: session.session.clientID, connectionID: session.connection.id,
                    kind: .began))
        }
    }

    private func sessionEnded(_ session: ServerConnection, principal: String, reason: SessionEndReason) {
        presence?.ended(principal, connectionID: session.connection.id)
        guard sessionEvents.isObserved else { return }
        sessionEvents.publish(
            SessionEvent(
                principal: principal, clientID: session.session.clientID, connectionID: session.connection.id,
                kind: .ended(reason)))
    }

    /// How many sessions `principal` has here.
    func sessionCount(of principal: String) -> Int {
        registry.withLock { $0.byPrincipal[PrincipalKey(principal)]?.count ?? 0 }
    }

    /// Removes `session` from `principal`'s connections: whether it was among them, and whether it
    /// was the last.
    private static func remove(
        _ session: ServerConnection, principal: String, from registry: inout Registry
    ) -> (present: Bool, last: Bool) {
        let principal = PrincipalKey(principal)
        let present = registry.byPrincipal[principal]?.removeValue(forKey: session.connection.id) != nil
        guard registry.byPrincipal[principal]?.isEmpty == true else { return (present, false) }
        registry.byPrincipal[principal] = nil
        return (present, true)
    }

    /// Whether a connection of `principal` is open here.
    func holds(_ principal: String) -> Bool {
        registry.withLock { $0.byPrincipal[PrincipalKey(principal)] != nil }
    }

    /// The principals with a connection here.
    func heldPrincipals() -> [String] {
        registry.withLock { $0.byPrincipal.keys.map(\.name) }
    }

    func connections(of principal: String) -> [ServerConnection] {
        registry.withLock { Array(($0.byPrincipal[PrincipalKey(principal)] ?? [:]).values) }
    }

    func allConnections() -> [ServerConnection] {
        registry.withLock { Array($0.all.values) }
    }

    /// Stops admitting connections and returns the open ones.
    func beginShutdown() -> [ServerConnection] {
        let connections = registry.withLock { registry in
            registry.shuttingDown = true
            return Array(registry.all.values)
        }
        // Orphaned handlers end with the server rather than outlive it.
        for orphan in dedupe.withLock({ $0.orphans.removeAll() }) { orphan.stop() }
        return connections
    }

    /// Waits until no connection is open, or `timeout` passes (by the server's clock, or with
    /// `realTime` by the system's: the last wait of a shutdown must end even if a manual clock
    /// never moves). Returns true when empty.
    func waitUntilNoConnections(timeout: Duration, realTime: Bool = false, on loop: EventLoop) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id: UInt64? = registry.withLock { registry in
                guard !registry.all.isEmpty else { return nil }
                registry.nextWaiterID += 1
                registry.emptyWaiters[registry.nextWaiterID] = continuation
                return registry.nextWaiterID
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let expire: @Sendable () -> Void = { [self] in
                // Whoever removes the continuation resumes it: exactly once.
                let expired = registry.withLock { $0.emptyWaiters.removeValue(forKey: id) }
                expired?.resume(returning: false)
            }
            if realTime {
                loop.scheduleTimer(after: timeout, expire)
            } else {
                _ = clock.schedule(at: clock.now.advanced(by: timeout), on: loop, expire)
            }
        }
    }

    // MARK: Push sizes

    /// The size of the push frame for `topic` and `payload` at the largest seq and epoch, whose
    /// varints are the longest, so that the check holds whatever the store assigns.
    private static func pushFrameSize(topic: String, payload: [UInt8]) -> Int {
        Frame.push(Frame.Push(seq: .max, topic: topic, payload: payload, epoch: .max)).encodedSize
    }

    /// Throws `INVALID_ARGUMENT` for a push larger than ``ServerConfiguration/maxOutgoingFrameBytes``.
    func checkPushSize(topic: String, payload: [UInt8]) throws(LongLinkError) {
        let size = Self.pushFrameSize(topic: topic, payload: payload)
        guard size > configuration.maxOutgoingFrameBytes else { return }
        throw LongLinkError(
            code: .invalidArgument,
            message:
                "push too large: a \(size)-byte frame, clients read at most \(configuration.maxOutgoingFrameBytes)")
    }

    /// Whether a best-effort push fits ``ServerConfiguration/maxOutgoingFrameBytes``; one that does
    /// not is counted as dropped.
    func bestEffortPushFits(topic: String, payload: [UInt8]) -> Bool {
        let size = Self.pushFrameSize(topic: topic, payload: payload)
        guard size > configuration.maxOutgoingFrameBytes else { return true }
        counters.bestEffortPushesDropped.increment()
        return false
    }

    // MARK: Handler completion

    /// What copies waiting for an execution that was cancelled receive.
    static let cancelledReply = Frame.Response(status: Frame.Status(code: .cancelled, message: "request cancelled"))

    /// A handler returned (`response` nil: it was cancelled). Answers every copy waiting for its
    /// execution: with de-duplication (`run`), every copy the window holds, on any connection;
    /// without, the one request on `origin`.
    ///
    /// `kept: false` answers the copies without storing the reply, so that a later copy runs the
    /// request (a fleet's shared window could not be reached: the request did not run).
    func executionFinished(
        origin: ServerConnection, requestID: String, token: UInt64, run: DedupeRun?,
        response: Frame.Response?, kept: Bool = true
    ) {
        guard let run else {
            origin.deliver(requestID: requestID, token: token, response: response)
            return
        }
        if !kept, let response {
            let (waiters, orphan) = dedupe.withLock { $0.abandon(run) }
            orphan?.cancelTimer()
            deliver(response, to: waiters)
            return
        }
        let settled = settle(run, response: response, at: dedupeTime(.now))
        deliver(settled.reply, binding: settled.binding, to: settled.waiters)
    }

    /// Answers every copy in `waiters` with `response`, except `origin`'s own copy (the connection
    /// and token of the request that ran), which that connection answers itself. `binding`: what
    /// the execution bound its connection to; each copy's connection is bound alike.
    func deliver(
        _ response: Frame.Response, binding: StoredReply.Binding? = nil, to waiters: DedupeWaiters,
        except origin: (connection: ServerConnection, token: UInt64)? = nil
    ) {
        for waiter in waiters {
            if let origin, waiter.connection === origin.connection, waiter.token == origin.token { continue }
            waiter.connection.deliver(
                requestID: waiter.requestID, token: waiter.token, response: response, binding: binding)
        }
    }

    /// Records how a de-duplicated execution ended (stored when it answered, forgotten when it was
    /// cancelled) and returns every copy waiting for it, with the reply they all get and what the
    /// execution bound its connection to. `now` is on the window's time line (``dedupeTime(_:)``).
    func settle(
        _ run: DedupeRun, response: Frame.Response?, at now: Int64
    ) -> (waiters: DedupeWaiters, reply: Frame.Response, binding: StoredReply.Binding?) {
        guard let response else {
            let (waiters, orphan) = dedupe.withLock { $0.abandon(run) }
            orphan?.cancelTimer()
            return (waiters, Self.cancelledReply, nil)
        }
        let (waiters, binding, orphan) = dedupe.withLock { $0.finish(run, response: response, at: now) }
        orphan?.cancelTimer()
        return (waiters, response, binding)
    }

    // MARK: Orphaned executions

    /// Offers the execution `run`, whose connection closed, as an orphan of `client` (see
    /// ``OrphanedExecutions``): at a bound it is stopped at once; otherwise it runs on and its
    /// deadline timer stays armed.
    func adoptOrphan(_ run: DedupeRun, client: String, handle: OrphanHandle) {
        switch dedupe.withLock({ $0.adopt(run, client: client, handle: handle) }) {
        case .adopted:
            counters.orphanedExecutions.increment()
        case .refused:
            counters.orphansRefused.increment()
            handle.stop()
        case .finished:
            handle.cancelTimer()
        }
    }

    /// The deadline of `run` passed after its connection closed: stops the orphaned execution and
    /// answers the copies that joined it `DEADLINE_EXCEEDED`.
    func orphanTimedOut(_ run: DedupeRun, status: Frame.Status) {
        guard let (handle, waiters) = dedupe.withLock({ $0.orphanTimedOut(run) }) else { return }
        counters.requestsTimedOut.increment()
        handle.task.cancel()
        deliver(Frame.Response(status: status), to: waiters)
    }
}
