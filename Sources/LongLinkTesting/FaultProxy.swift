import LongLinkCore
import LongLinkTransport
import LongLinkWire

/// A fault-injecting TCP proxy for tests: it sits between any client and any server, forwards bytes both ways
/// (it never parses them), and injects faults on command.
///
/// ```swift
/// let proxy = FaultProxy(upstream: .tcp(host: "127.0.0.1", port: serverPort))
/// try await proxy.start()
/// let client = connect(to: try proxy.endpoint)     // the client talks to the proxy
/// await proxy.setLatency(.milliseconds(50))         // every pair, and new ones
/// await proxy.blackHole(.both, for: .seconds(3))    // a half-open link for 3 s
/// await proxy.connections.first?.reset()            // one pair only
/// await proxy.stop()
/// ```
///
/// Each accepted client connection is paired with a new connection to `upstream`, made on the same event loop;
/// the client's bytes wait in its kernel buffer until the upstream connection is up (if it fails, the client is
/// reset). When one side closes, the proxy forwards what it still holds for the other side and then closes it
/// the same way (a clean end as a FIN, a reset as a reset).
///
/// Faults (see ``NetworkFault``) can be changed at any time, for every pair at once through the proxy (they also
/// become the defaults of pairs accepted later) or for one pair through ``connections``. Conditions stay until
/// changed; a fault with a `for:` duration is undone by the proxy after that duration.
///
/// Memory stays bounded: each direction of each pair holds at most ``bufferLimit`` bytes (plus one read) and
/// stops reading from its source while that is full or the destination is not writable.
///
/// The proxy runs on the process's shared event loops.
public final class FaultProxy: FaultTarget {
    private enum Phase {
        case idle
        case starting
        case running
        case stopped
    }

    private struct Reversal {
        var loop: EventLoop
        var timer: EventLoopTimer?
    }

    private struct State {
        var phase = Phase.idle
        var listener: Listener?
        var address: SocketAddress?
        var links: [Int: ProxyLink] = [:]
        var nextLinkID = 0
        var defaults = LinkConditions()
        /// How new connections are turned away; nil while accepting.
        var refusal: CloseMode?
        var reversals: [UInt64: Reversal] = [:]
        var nextReversalID: UInt64 = 0
        var stopRequested = false
        var runWaiters: [CheckedContinuation<Void, Never>] = []
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Where every proxied connection goes.
    public let upstream: Endpoint
    /// Where the proxy listens (port 0: a free port; read the real one from ``localAddress``).
    public let listenEndpoint: Endpoint
    /// The event loops that run the proxy, which must keep running until ``stop()`` has returned.
    package let group: EventLoopGroup
    /// The most bytes one direction of one pair holds (and the high watermark of each side's write queue).
    public let bufferLimit: Int

    private let options: ConnectionOptions
    private let counters = ProxyCounters()
    private let state = Locked(State())

    /// Creates a proxy to `upstream`. Nothing listens until ``start()``.
    ///
    /// - Parameters:
    ///   - upstream: the server behind the proxy.
    ///   - listenOn: where clients connect; by default a free loopback port.
    ///   - bufferLimit: the most bytes one direction of one pair holds (at least 1 KiB).
    ///   - connectTimeout: the budget for each upstream connection.
    public convenience init(
        upstream: Endpoint, listenOn: Endpoint = .tcp(host: "127.0.0.1", port: 0), bufferLimit: Int = 256 << 10,
        connectTimeout: Duration = .seconds(5)
    ) {
        self.init(
            upstream: upstream, listenOn: listenOn, group: .shared, bufferLimit: bufferLimit,
            connectTimeout: connectTimeout)
    }

    /// Creates a proxy to `upstream` on `group`'s event loops (the package's tests run it on loops
    /// of their own).
    package init(
        upstream: Endpoint, listenOn: Endpoint = .tcp(host: "127.0.0.1", port: 0), group: EventLoopGroup,
        bufferLimit: Int = 256 << 10, connectTimeout: Duration = .seconds(5)
    ) {
        self.upstream = upstream
        self.listenEndpoint = listenOn
        self.group = group
        self.bufferLimit = max(1 << 10, bufferLimit)
        var options = ConnectionOptions()
        options.connectTimeout = connectTimeout
        options.writeBufferHighWatermark = self.bufferLimit
        options.writeBufferLowWatermark = self.bufferLimit / 4
        self.options = options
    }

    deinit {
        let (listener, links) = state.withLock { state in
            (state.listener, Array(state.links.values))
        }
        listener?.close()
        for link in links {
            link.loop.execute {
                link.terminate(.immediately)
            }
        }
    }

    // MARK: Lifecycle

    /// Binds ``listenEndpoint`` and starts proxying; returns the bound address.
    ///
    /// Throws the transport's ``LongLinkCore/LongLinkError`` when binding fails (the proxy can then be started
    /// again), `failedPrecondition` when it was already started, and `shutdown` when ``stop()`` came first.
    @discardableResult
    public func start() async throws(LongLinkError) -> SocketAddress {
        let fresh = state.withLock { state -> Bool in
            guard state.phase == .idle else {
                return false
            }
            state.phase = .starting
            return true
        }
        guard fresh else {
            throw LongLinkError(code: .failedPrecondition, message: "the proxy was already started or stopped")
        }
        let listener: Listener
        do {
            listener = try await Listener.bind(to: listenEndpoint, group: group, options: options) {
                [weak self] connection in
                guard let self else {
                    connection.close(.immediately)
                    return
                }
                self.accepted(connection)
            }
        } catch {
            state.withLock { state in
                if state.phase == .starting {
                    state.phase = .idle
                }
            }
            throw error
        }
        let stopped = state.withLock { state -> Bool in
            guard state.phase == .starting else {
                return true
            }
            state.phase = .running
            state.listener = listener
            state.address = listener.localAddress
            return false
        }
        if stopped {
            listener.close()
            throw LongLinkError(code: .shutdown, message: "the proxy was stopped while it started")
        }
        return listener.localAddress
    }

    /// Starts the proxy (see ``start()``) and proxies until ``stop()`` is called or the calling task is cancelled,
    /// then stops and returns once every pair is closed.
    public func run() async throws {
        try await start()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let stopNow = state.withLock { state -> Bool in
                    if state.stopRequested {
                        return true
                    }
                    state.runWaiters.append(continuation)
                    return false
                }
                if stopNow {
                    continuation.resume()
                }
            }
        } onCancel: {
            requestStop()
        }
        await stop()
    }

    /// Stops listening, closes every pair at once (both sides, with a FIN), cancels pending timed reversals and
    /// returns when every pair is closed. Idempotent; a stopped proxy cannot be started again.
    public func stop() async {
        let (listener, links, reversals) = state.withLock { state in
            state.phase = .stopped
            let listener = state.listener
            state.listener = nil
            let reversals = Array(state.reversals.values)
            state.reversals.removeAll()
            return (listener, Array(state.links.values), reversals)
        }
        requestStop()
        listener?.close()
        for reversal in reversals {
            if let timer = reversal.timer {
                reversal.loop.cancelTimer(timer)
            }
        }
        for link in links {
            link.loop.execute {
                link.terminate(.immediately)
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.links.isEmpty {
                    return true
                }
                state.stopWaiters.append(continuation)
                return false
            }
            if done {
                continuation.resume()
            }
        }
    }

    private func requestStop() {
        let waiters = state.withLock { state in
            state.stopRequested = true
            defer { state.runWaiters.removeAll() }
            return state.runWaiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    // MARK: Addresses

    /// The address clients connect to (with the real port when listening on port 0). Throws `failedPrecondition`
    /// before ``start()`` has bound it.
    public var localAddress: SocketAddress {
        get throws(LongLinkError) {
            guard let address = state.withLock({ $0.address }) else {
                throw LongLinkError(code: .failedPrecondition, message: "the proxy has not been started")
            }
            return address
        }
    }

    /// ``localAddress`` as an ``LongLinkTransport/Endpoint`` to connect to.
    public var endpoint: Endpoint {
        get throws(LongLinkError) {
            let address = try localAddress
            if address.isUnixDomain {
                return .unix(path: address.host)
            }
            return .tcp(host: address.host, port: address.port ?? 0)
        }
    }

    // MARK: Pairs and statistics

    /// The pairs open now, oldest first.
    public var connections: [ProxiedConnection] {
        state.withLock { state in
            state.links.values.sorted { $0.id < $1.id }.map(ProxiedConnection.init(link:))
        }
    }

    /// The proxy's counters now.
    public var statistics: Statistics {
        let open = state.withLock { $0.links.count }
        let traffic = counters.traffic
        return Statistics(
            connectionsAccepted: counters.accepted.load(ordering: .relaxed),
            connectionsRefused: counters.refused.load(ordering: .relaxed),
            upstreamConnectFailures: counters.upstreamConnectFailures.load(ordering: .relaxed),
            openConnections: open,
            bytesForwardedUpstream: traffic.forwardedUpstream.load(ordering: .relaxed),
            bytesForwardedDownstream: traffic.forwardedDownstream.load(ordering: .relaxed),
            bytesDiscardedUpstream: traffic.discardedUpstream.load(ordering: .relaxed),
            bytesDiscardedDownstream: traffic.discardedDownstream.load(ordering: .relaxed),
            faultsApplied: traffic.faultsApplied.load(ordering: .relaxed),
            natMappingsForgotten: traffic.natMappingsForgotten.load(ordering: .relaxed))
    }

    // MARK: Faults

    /// Applies `fault` to every open pair (conditions also become the defaults of pairs accepted later; a cut or
    /// reset affects only the pairs open now) and returns once it is in effect everywhere. A timed fault's
    /// ``NetworkFault/reversal`` is applied to the whole proxy after its duration.
    public func apply(_ fault: NetworkFault) async {
        let immediate = fault.withoutDuration
        for link in record(immediate) {
            await link.apply(immediate)
        }
        counters.traffic.faultsApplied.add(1, ordering: .relaxed)
        if let duration = fault.duration, let reversal = fault.reversal {
            scheduleReversal(reversal, after: duration)
        }
    }

    /// Applies ``NetworkFault/refuseConnections(reset:for:)``: new connections are accepted and closed at once
    /// (reset when `reset` is true), for `duration` or until ``acceptConnections()``.
    public func refuseConnections(reset: Bool = false, for duration: Duration? = nil) async {
        await apply(.refuseConnections(reset: reset, for: duration))
    }

    /// Applies ``NetworkFault/acceptConnections``: new connections are proxied again.
    public func acceptConnections() async {
        await apply(.acceptConnections)
    }

    /// Updates the defaults (or the refusal) for `fault`; returns the pairs it must be applied to.
    private func record(_ fault: NetworkFault) -> [ProxyLink] {
        state.withLock { state -> [ProxyLink] in
            switch fault.kind {
            case .refuseConnections(let reset):
                state.refusal = reset ? .reset : .immediately
                return []
            case .acceptConnections:
                state.refusal = nil
                return []
            case .clear:
                state.refusal = nil
                state.defaults = LinkConditions()
            default:
                state.defaults.apply(fault.kind)
            }
            return Array(state.links.values)
        }
    }

    private func scheduleReversal(_ reversal: NetworkFault, after duration: Duration) {
        let loop = group.next()
        let id = state.withLock { state -> UInt64? in
            guard state.phase != .stopped else {
                return nil
            }
            state.nextReversalID += 1
            state.reversals[state.nextReversalID] = Reversal(loop: loop, timer: nil)
            return state.nextReversalID
        }
        guard let id else {
            return
        }
        let timer = loop.scheduleTimer(after: duration) { [weak self] in
            guard let self else {
                return
            }
            let due = state.withLock { $0.reversals.removeValue(forKey: id) != nil }
            guard due else {
                return
            }
            // Counted once every pair has applied it, like a fault applied with apply(_:).
            let links = record(reversal)
            let countdown = Countdown(links.count) { [counters] in
                counters.traffic.faultsApplied.add(1, ordering: .relaxed)
            }
            for link in links {
                link.applySoon(reversal, then: countdown.tick)
            }
        }
        state.withLock { state in
            state.reversals[id]?.timer = timer
        }
    }

    // MARK: Accepting

    private enum Admission {
        case turnAway(CloseMode, refused: Bool)
        case proxy(ProxyLink)
    }

    /// Called by the listener on the accepted connection's loop.
    private func accepted(_ connection: Connection) {
        let admission = state.withLock { state -> Admission in
            guard state.phase == .starting || state.phase == .running else {
                return .turnAway(.immediately, refused: false)
            }
            if let refusal = state.refusal {
                return .turnAway(refusal, refused: true)
            }
            state.nextLinkID += 1
            let link = ProxyLink(
                id: state.nextLinkID, client: connection, upstream: upstream, options: options,
                conditions: state.defaults, bufferLimit: bufferLimit, proxyCounters: counters
            ) { [weak self] link in
                self?.linkFinished(link)
            }
            state.links[link.id] = link
            return .proxy(link)
        }
        switch admission {
        case .turnAway(let mode, let refused):
            if refused {
                counters.refused.add(1, ordering: .relaxed)
            }
            connection.close(mode)
        case .proxy(let link):
            counters.accepted.add(1, ordering: .relaxed)
            link.begin()
        }
    }

    private func linkFinished(_ link: ProxyLink) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.links[link.id] = nil
            guard state.links.isEmpty else {
                return []
            }
            defer { state.stopWaiters.removeAll() }
            return state.stopWaiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }
}
