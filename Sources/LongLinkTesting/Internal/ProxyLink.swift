import LongLinkTransport
import LongLinkWire
import Synchronization

/// One proxied connection: the client's connection (accepted by the proxy), the proxy's connection to the
/// upstream server, and a ``ForwardingPipe`` each way.
///
/// The upstream connection is made on the client connection's loop, so everything here runs on one thread.
/// Loop-only state is marked; `@unchecked Sendable` because closures for that loop capture the link.
final class ProxyLink: ConnectionHandler, @unchecked Sendable {
    let id: Int
    let loop: EventLoop
    let client: Connection
    let counters = TrafficCounters()
    private let isOpenFlag = Atomic<Bool>(true)

    private let upstreamEndpoint: Endpoint
    private let options: ConnectionOptions
    private let proxyCounters: ProxyCounters
    private let onFinished: @Sendable (ProxyLink) -> Void

    // Loop thread only.
    private let up: ForwardingPipe
    private let down: ForwardingPipe
    private var server: Connection?
    private var connecting = false
    private var connectTask: Task<Void, Never>?
    private var clientClosed = false
    private var serverClosed = false
    /// Set by a cut or reset: closes are not propagated, both sides are closed this way.
    private var terminatedBy: CloseMode?
    private var finished = false
    private var revertTimers: [UInt64: EventLoopTimer] = [:]
    private var nextTimerID: UInt64 = 0
    private var nat = NATMapping()
    private var natTimer: EventLoopTimer?
    /// The NAT the link starts with (the proxy's defaults when it was accepted).
    private let initialNAT: (Duration?, NetworkFault.ForgottenMapping)

    init(
        id: Int, client: Connection, upstream: Endpoint, options: ConnectionOptions, conditions: LinkConditions,
        bufferLimit: Int, proxyCounters: ProxyCounters, onFinished: @escaping @Sendable (ProxyLink) -> Void
    ) {
        self.id = id
        self.loop = client.eventLoop
        self.client = client
        self.upstreamEndpoint = upstream
        self.options = options
        self.proxyCounters = proxyCounters
        self.onFinished = onFinished
        self.initialNAT = (conditions.natIdleTimeout, conditions.natForgotten)
        up = ForwardingPipe(
            loop: loop, upstream: true, conditions: conditions.upstream, bufferLimit: bufferLimit,
            linkCounters: counters, proxyCounters: proxyCounters.traffic)
        down = ForwardingPipe(
            loop: loop, upstream: false, conditions: conditions.downstream, bufferLimit: bufferLimit,
            linkCounters: counters, proxyCounters: proxyCounters.traffic)
    }

    /// True until both sides are closed.
    var isOpen: Bool {
        isOpenFlag.load(ordering: .acquiring)
    }

    // MARK: Lifecycle (loop thread)

    /// Starts the client side (reading held) and connects upstream.
    func begin() {
        assert(loop.inEventLoop)
        up.source = client
        up.holdsSource = true
        down.attach(destination: client)
        client.start(handler: self)
        up.updateReading()
        configureNAT(initialNAT.0, initialNAT.1)
        connecting = true
        let loop = loop
        let endpoint = upstreamEndpoint
        let options = options
        connectTask = Task { [self] in
            let result: Result<Connection, LongLinkError>
            do throws(LongLinkError) {
                result = .success(try await Connection.connect(to: endpoint, options: options, on: loop))
            } catch {
                result = .failure(error)
            }
            loop.execute { [self] in
                connectFinished(result)
            }
        }
    }

    private func connectFinished(_ result: Result<Connection, LongLinkError>) {
        connecting = false
        connectTask = nil
        switch result {
        case .success(let connection):
            if clientClosed || terminatedBy != nil {
                connection.close(terminatedBy ?? .immediately)
            } else {
                server = connection
                down.source = connection
                connection.start(handler: self)
                down.updateReading()
                up.attach(destination: connection)
                up.holdsSource = false
                up.updateReading()
            }
        case .failure:
            if terminatedBy == nil && !clientClosed {
                proxyCounters.upstreamConnectFailures.add(1, ordering: .relaxed)
                client.close(.reset)
            }
        }
        checkFinished()
    }

    /// Closes both sides with `mode` (a cut or a reset), without passing either close on to the other side.
    func terminate(_ mode: CloseMode) {
        assert(loop.inEventLoop)
        guard terminatedBy == nil else {
            return
        }
        terminatedBy = mode
        connectTask?.cancel()
        client.close(mode)
        server?.close(mode)
    }

    private func checkFinished() {
        guard !finished, clientClosed, serverClosed || (server == nil && !connecting) else {
            return
        }
        finished = true
        for timer in revertTimers.values {
            loop.cancelTimer(timer)
        }
        revertTimers.removeAll()
        cancelNATTimer()
        up.tearDown()
        down.tearDown()
        server = nil
        isOpenFlag.store(false, ordering: .releasing)
        onFinished(self)
    }

    // MARK: Faults

    /// Applies `fault` on the link's loop and returns once it is in effect.
    func apply(_ fault: NetworkFault) async {
        await loop.submitAndWait { [self] in
            applyOnLoop(fault)
        }
    }

    /// Applies `fault` on the link's loop without waiting; `then` runs on the loop once it is in effect.
    func applySoon(_ fault: NetworkFault, then: @escaping @Sendable () -> Void) {
        loop.execute { [self] in
            applyOnLoop(fault)
            then()
        }
    }

    private func applyOnLoop(_ fault: NetworkFault) {
        guard !finished else {
            return
        }
        counters.faultsApplied.add(1, ordering: .relaxed)
        switch fault.kind {
        case .cut:
            terminate(.immediately)
        case .reset:
            terminate(.reset)
        case .refuseConnections, .acceptConnections:
            break
        default:
            var conditions = LinkConditions(
                upstream: up.conditions, downstream: down.conditions, natIdleTimeout: nat.timeout,
                natForgotten: nat.onForgotten)
            conditions.apply(fault.kind)
            up.setConditions(conditions.upstream)
            down.setConditions(conditions.downstream)
            configureNAT(conditions.natIdleTimeout, conditions.natForgotten)
        }
        if let duration = fault.duration, let reversal = fault.reversal, !finished {
            nextTimerID += 1
            let id = nextTimerID
            revertTimers[id] = loop.scheduleTimer(after: duration) { [self] in
                guard revertTimers.removeValue(forKey: id) != nil else {
                    return
                }
                applyOnLoop(reversal)
            }
        }
    }

    // MARK: NAT

    private func configureNAT(_ timeout: Duration?, _ onForgotten: NetworkFault.ForgottenMapping) {
        cancelNATTimer()
        if let due = nat.configure(timeout, onForgotten: onForgotten, now: .now) {
            armNATTimer(due)
        }
    }

    private func armNATTimer(_ due: ContinuousClock.Instant) {
        // Armed once per idle period, not per read: a busy link's timer finds fresh traffic and waits again.
        natTimer = loop.scheduleTimer(after: max(.zero, due - .now)) { [self] in
            natTimer = nil
            guard !finished else {
                return
            }
            switch nat.timerFired(now: .now) {
            case .forget:
                counters.natMappingsForgotten.add(1, ordering: .relaxed)
                proxyCounters.traffic.natMappingsForgotten.add(1, ordering: .relaxed)
                up.sever()
                down.sever()
            case .wait(let until):
                armNATTimer(until)
            case .nothing:
                break
            }
        }
    }

    private func cancelNATTimer() {
        if let natTimer {
            loop.cancelTimer(natTimer)
            self.natTimer = nil
        }
    }

    // MARK: ConnectionHandler

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        let pipe = connection === client ? up : down
        // The clock is read only while a NAT watches the link.
        if nat.isActive, nat.traffic(now: .now) == .discardAndReset {
            pipe.received(bytes)  // severed: counted as discarded
            connection.close(.reset)
            return
        }
        pipe.received(bytes)
    }

    func connectionWritabilityChanged(_ connection: Connection) {
        if connection === client {
            down.pump()
        } else {
            up.pump()
        }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        // How the other side is closed: a clean end as a clean end, a reset as a reset, anything else abruptly.
        let mode: CloseMode =
            if terminatedBy != nil {
                .immediately
            } else if let error {
                error.code == .connectionReset ? .reset : .immediately
            } else {
                .graceful
            }
        if connection === client {
            clientClosed = true
            down.destinationClosed()
            if terminatedBy == nil {
                up.sourceEnded(mode)
            } else {
                up.tearDown()
            }
            connectTask?.cancel()
        } else {
            serverClosed = true
            up.destinationClosed()
            if terminatedBy == nil {
                down.sourceEnded(mode)
            } else {
                down.tearDown()
            }
        }
        checkFinished()
    }
}
