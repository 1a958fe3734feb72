internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// A LongLink server: many connections, method handlers, request de-duplication, reliable pushes
/// kept until acknowledged, heartbeats, `GoAway` and graceful shutdown.
///
/// ```swift
/// var router = Router()
/// router.register("echo") { payload, _ in payload }
/// let server = LongLinkServer(configuration: .init(), router: router)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await server.run() }
///     print("listening on", try await server.localAddress)
/// }
/// ```
///
/// ``run()`` serves until ``shutdown()`` is called or its task is cancelled, then shuts down
/// gracefully: it stops accepting, sends `GoAway(UNAVAILABLE, reconnect: true)` on every
/// connection, lets in-flight handlers answer (bounded by ``ServerConfiguration/drainTimeout``),
/// and closes.
public final class LongLinkServer: Sendable {
    private struct State {
        /// `run()` was called: a server runs once.
        var started = false
        var addressWaiters: [CheckedContinuation<SocketAddress, any Error>] = []
        var address: SocketAddress?
        var failure: LongLinkError?
        var shutdownRequested = false
        var abortRequested = false
        var shutdownWaiter: CheckedContinuation<Void, Never>?
    }

    /// The configuration the server runs with.
    public let configuration: ServerConfiguration
    let core: ServerCore
    private let state = Locked(State())
    /// The TLS context new connections get (replaced by ``reloadTLS(_:)``).
    private let tlsContext = Locked<TLSContext?>(nil)

    /// Creates a server that keeps reliable pushes in an ``InMemoryPushStore`` bounded by
    /// ``ServerConfiguration/budgets``, and its de-duplication window in its own memory: neither survives a restart of the process. Nothing happens until ``run()``.
    public convenience init(configuration: ServerConfiguration = .init(), router: Router) {
        self.init(
            configuration: configuration, router: router,
            stores: .inMemory(
                capacityPerPrincipal: configuration.budgets.pushCapacityPerPrincipal,
                bytesPerPrincipal: configuration.budgets.pushBytesPerPrincipal))
    }

    /// Creates a server on `stores`: reliable pushes and, when `stores` has one, the de-duplication
    /// window live there (see `LongLinkRedis` for stores a fleet of servers shares, so that a push
    /// produced on any server reaches its principal on whichever server holds it, and a request
    /// resent to another server after a failover runs once). The server owns the stores: ``run()``
    /// starts their notices and shuts them down when it returns. Nothing happens until ``run()``.
    public init(configuration: ServerConfiguration = .init(), router: Router, stores: ServerStores) {
        self.configuration = configuration
        self.core = ServerCore(configuration: configuration, router: router, stores: stores)
    }

    private var group: EventLoopGroup { configuration.eventLoopGroup ?? .shared }

    /// Listens and serves until ``shutdown()`` or cancellation, then shuts down gracefully.
    ///
    /// Throws ``LongLinkError`` when the configuration is invalid, the endpoint cannot be bound,
    /// or `run()` was called before.
    public func run() async throws {
        do throws(LongLinkError) {
            try configuration.validate()
            if let tls = configuration.tls {
                let context = try TLSContext(server: tls)
                tlsContext.withLock { $0 = context }
            }
        } catch {
            failStart(error)
            throw error
        }
        let fresh = state.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            return true
        }
        guard fresh else {
            throw LongLinkError(code: .failedPrecondition, message: "run() was already called on this server")
        }
        await core.startObserving()
        let listener: Listener
        do {
            let core = self.core
            let tlsContext = self.tlsContext
            var currentContext: (@Sendable () -> TLSContext?)?
            if configuration.tls != nil {
                currentContext = { tlsContext.withLock { $0 } }
            }
            listener = try await Listener.bind(
                to: configuration.endpoint, group: group, options: configuration.connectionOptions,
                reusePort: configuration.reusesPort, tls: currentContext,
                onHandshakeFailure: { _ in core.counters.tlsHandshakeFailures.increment() },
                admitHandshake: { core.admitHandshake() }, handshakeEnded: { core.handshakeEnded() },
                onAccept: { connection in core.accept(connection) })
        } catch {
            core.presence?.halt()
            await core.shutdownStores()
            failStart(error)
            throw error
        }
        let waiters = state.withLock { state in
            state.address = listener.localAddress
            defer { state.addressWaiters.removeAll() }
            return state.addressWaiters
        }
        for waiter in waiters { waiter.resume(returning: listener.localAddress) }
        let metricsReporting = startReportingMetrics()

        await withTaskCancellationHandler {
            await waitForShutdownRequest()
        } onCancel: {
            self.shutdown()
        }
        await listener.closeAndWait()
        if state.withLock({ $0.abortRequested }) {
            await abortConnections()
        } else {
            await drain()
            // The sessions' ends reach the fleet's presence before the stores close.
            await core.presence?.finish()
        }
        metricsReporting?.cancel()
        reportMetrics()
        core.sessionEvents.finish()
        await core.shutdownStores()
    }

    /// Begins a graceful shutdown; ``run()`` returns when it is complete. Safe to call more than once,
    /// from any task, also before `run()`.
    public func shutdown() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.shutdownRequested = true
            defer { state.shutdownWaiter = nil }
            return state.shutdownWaiter
        }
        waiter?.resume()
    }

    /// Stops at once, as a crash would: no `GoAway`, every connection reset, in-flight handlers
    /// cancelled, and no session's end written to the fleet's presence (its sessions there end
    /// with their lease, ``ServerConfiguration/presenceLease``). For tests of client recovery;
    /// ``run()`` returns when the connections are gone.
    public func abort() {
        state.withLock { $0.abortRequested = true }
        // As a crash: the fleet's presence learns of no session's end, and keeps this server's
        // sessions until their lease passes.
        core.presence?.halt()
        shutdown()
    }

    /// The address the server listens on (with the real port when configured with port 0). Waits
    /// until ``run()`` has bound it; throws if binding failed.
    public var localAddress: SocketAddress {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<SocketAddress, LongLinkError>? in
                    if let address = state.address { return .success(address) }
                    if let failure = state.failure { return .failure(failure) }
                    state.addressWaiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }

    /// Replaces the certificate chain, key and client-certificate settings without a restart:
    /// connections accepted from now on get the new ones, open connections keep theirs.
    ///
    /// Throws ``LongLinkError/Code-swift.struct/invalidConfiguration`` when the new files cannot
    /// be used (the old ones stay in service), and
    /// ``LongLinkError/Code-swift.struct/failedPrecondition`` when the server was not configured
    /// with ``ServerConfiguration/tls``. ``configuration`` keeps showing the configuration the
    /// server started with.
    public func reloadTLS(_ tls: ServerTLSConfiguration) throws(LongLinkError) {
        guard configuration.tls != nil else {
            throw LongLinkError(
                code: .failedPrecondition, message: "the server was started without TLS; it cannot reload TLS")
        }
        let context = try TLSContext(server: tls)
        tlsContext.withLock { $0 = context }
    }

    /// The server's counters now.
    public var statistics: ServerStatistics {
        core.statistics
    }

    // MARK: Pushes

    /// Sends a best-effort push (seq 0) to `principal`'s open connections; dropped where a
    /// connection is not writable, never stored.
    public func pushBestEffort(to principal: String, topic: String, payload: [UInt8]) {
        guard core.bestEffortPushFits(topic: topic, payload: payload) else { return }
        for connection in core.connections(of: principal) {
            connection.sendBestEffort(topic: topic, payload: payload, for: principal)
        }
    }

    /// Sends a best-effort push to every established connection.
    public func broadcast(topic: String, payload: [UInt8]) {
        guard core.bestEffortPushFits(topic: topic, payload: payload) else { return }
        for connection in core.allConnections() {
            connection.sendBestEffort(topic: topic, payload: payload, for: nil)
        }
    }

    /// Closes every connection of `principal` with `GoAway`; returns how many there were. A
    /// connection told to go away before (draining its requests, or closing) is not counted: it
    /// has left its principal already.
    ///
    /// `reconnect: false` tells the client to stop for good (kicked: logged in elsewhere, banned).
    @discardableResult
    public func kick(
        principal: String, code: StatusCode = .unauthenticated, reason: String, reconnect: Bool = false,
        retryAfter: Duration = .zero
    ) -> Int {
        let connections = core.connections(of: principal)
        for connection in connections {
            connection.goAway(code: code, reason: reason, reconnect: reconnect, retryAfter: retryAfter)
        }
        return connections.count
    }

    /// When the credentials of `principal`'s sessions expire, by connection id (the id handlers see
    /// in ``RequestContext/connectionID``); sessions whose handlers set no lifetime are left out
    /// (see ``RequestContext/setCredentialLifetime(_:)``).
    public func credentialExpiries(of principal: String) -> [UInt64: ContinuousClock.Instant] {
        var expiries: [UInt64: ContinuousClock.Instant] = [:]
        for connection in core.connections(of: principal) {
            if let expiry = connection.credentialExpiry { expiries[connection.connection.id] = expiry }
        }
        return expiries
    }

    /// Sends `GoAway` to every connection (for example before a restart) without stopping the server.
    public func goAwayAll(
        code: StatusCode = .unavailable, reason: String, reconnect: Bool = true, retryAfter: Duration = .zero
    ) {
        for connection in core.allConnections() {
            connection.goAway(code: code, reason: reason, reconnect: reconnect, retryAfter: retryAfter)
        }
    }

    // MARK: Internals

    private func failStart(_ error: LongLinkError) {
        let waiters = state.withLock { state in
            state.failure = error
            defer { state.addressWaiters.removeAll() }
            return state.addressWaiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    private func waitForShutdownRequest() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.shutdownRequested { return true }
                state.shutdownWaiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func abortConnections() async {
        let connections = core.beginShutdown()
        for connection in connections { connection.forceClose(mode: .reset) }
        _ = await core.waitUntilNoConnections(timeout: .seconds(2), realTime: true, on: group.next())
    }

    private func drain() async {
        let connections = core.beginShutdown()
        for connection in connections {
            connection.goAway(
                code: .unavailable, reason: "server shutting down", reconnect: true,
                retryAfter: configuration.shutdownRetryAfter)
        }
        let loop = group.next()
        if await core.waitUntilNoConnections(timeout: configuration.drainTimeout + .milliseconds(100), on: loop) {
            return
        }
        for connection in core.allConnections() { connection.forceClose() }
        _ = await core.waitUntilNoConnections(timeout: .seconds(2), realTime: true, on: loop)
    }
}
