internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// A client of a LongLink server: request/response with the feel of HTTP over one persistent
/// connection, server pushes as an `AsyncStream`, and a supervisor that keeps the link alive.
///
/// ```swift
/// try await withLongLinkClient(configuration: .init(endpoints: [.tcp(host: "quotes.example", port: 7000)])) { client in
///     let room = try await client.send(EnterRoom(room: 42, user: "alice"))   // suspends until *its* reply
///     for await alert in client.pushes(topic: "alerts") { show(alert) }   // acked for you
/// }
/// ```
///
/// Each request suspends on a `CheckedContinuation` kept by an actor (keyed by request id) that runs
/// on the connection's event loop. The request's deadline is computed once, so that it covers
/// queueing, reconnects and resends, and a task group races the reply against it (the default,
/// ``DeadlineStrategy/taskGroup``; ``DeadlineStrategy/deadlineHeap`` is the opt-in for very many
/// requests in flight). Pushes arrive as an `AsyncStream`, acknowledged once the stream has handed
/// them over. ``run()`` is the supervisor: it connects, logs in, replays subscriptions, sends
/// `Sync`, releases queued requests, and reconnects with backoff after every failure until
/// ``shutdown()`` or a terminal error.
public final class LongLinkClient: Sendable {
    /// The configuration the client runs with.
    public let configuration: ClientConfiguration
    let core: ClientCore
    let directory: EndpointDirectory
    private let started = Atomic<Bool>(false)
    /// The calls' metrics and the statistics' reporter, with ``ClientConfiguration/metrics``.
    let metrics: (calls: CallMetrics, reporter: MetricsReporter)?
    /// Identical calls in flight sharing one request (``RequestOptions/coalesces``).
    var coalescer: Coalescer { core.coalescer }

    /// Creates a client. Nothing connects until ``run()``.
    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
        let loop = (configuration.eventLoopGroup ?? .shared).next()
        self.core = ClientCore(loop: loop, configuration: configuration)
        self.directory = EndpointDirectory(configuration: configuration, loop: loop)
        self.metrics = configuration.metrics.map {
            (CallMetrics(sink: $0, prefix: "longlink_client", side: "Client"), MetricsReporter(sink: $0))
        }
    }

    // MARK: Requests

    /// Request ids are unique per client_id for the life of the client (the core's counter, which
    /// its credential refreshes share): a random start makes a restarted app with a stable client
    /// id unlikely to reuse an id the server remembers. Half the range is left above it, so the
    /// counter never wraps.
    private var makeRequestID: @Sendable () -> UInt64 {
        { [core] in core.makeRequestID() }
    }

    /// Sends `payload` to `method` and returns the reply's payload.
    ///
    /// Throws ``LongLinkError`` with the server's status when the reply is an error, with
    /// ``LongLinkError/Code-swift.struct/deadlineExceeded`` when the timeout passes (queueing and
    /// reconnects included; a call made on a client whose ``run()`` was never called waits in the
    /// offline queue, as one made just before `run()` must, and its deadline error then says the
    /// client was never started), ``LongLinkError/Code-swift.struct/resourceExhausted`` when the offline
    /// queue is full, ``LongLinkError/Code-swift.struct/connectionLost`` when the link dropped after
    /// the request was written and it could not be resent safely,
    /// ``LongLinkError/Code-swift.struct/outcomeUnknown`` when the fleet server running it stopped
    /// (a request marked idempotent is first sent again under a new id); and `CancellationError`
    /// when the calling task is cancelled (the server is told with `Cancel`).
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`): it only hands the call to the
    /// client's loop and suspends, so a caller on an actor pays no hop to the global executor and
    /// back, and the reply resumes it where it called.
    nonisolated(nonsending) public func request(
        _ method: String, payload: [UInt8] = [], options: RequestOptions = RequestOptions()
    ) async throws -> [UInt8] {
        guard metrics == nil, configuration.interceptors.isEmpty, options.cache == .networkOnly, !options.coalesces
        else {
            return try await layeredRequest(method, payload: payload, options: options)
        }
        // The default path goes straight to the wire: every layer between is an async frame of its
        // own on every call.
        return try await sendRequest(
            method, payload: payload, options: options,
            deadline: configuration.clock.now.advanced(by: options.timeout ?? configuration.defaultTimeout),
            session: core.session)
    }

    /// ``request(_:payload:options:)`` through its layers: metrics, interceptors, then the cache
    /// and coalescing layer.
    nonisolated(nonsending) private func layeredRequest(
        _ method: String, payload: [UInt8], options: RequestOptions
    ) async throws -> [UInt8] {
        guard let calls = metrics?.calls else {
            return try await unmeasuredRequest(method, payload: payload, options: options)
        }
        return try await calls.measure(calls.method(method)) {
            try await unmeasuredRequest(method, payload: payload, options: options)
        }
    }

    /// ``request(_:payload:options:)`` without its metrics: through the interceptors, then the
    /// cache and coalescing layer, or straight to the wire.
    nonisolated(nonsending) private func unmeasuredRequest(
        _ method: String, payload: [UInt8], options: RequestOptions
    ) async throws -> [UInt8] {
        let interceptors = configuration.interceptors
        guard interceptors.isEmpty else {
            return try await intercepted(ClientCall(method: method, payload: payload, options: options), interceptors)
        }
        return try await uninterceptedRequest(method, payload: payload, options: options)
    }

    /// `call` through `interceptors`, then on its way.
    private func intercepted(_ call: ClientCall, _ interceptors: [any ClientInterceptor]) async throws -> [UInt8] {
        var chain: @Sendable (ClientCall) async throws -> [UInt8] = { [self] call in
            try await uninterceptedRequest(call.method, payload: call.payload, options: call.options)
        }
        for interceptor in interceptors.reversed() {
            let next = chain
            chain = { call in try await interceptor.intercept(call, next: next) }
        }
        return try await chain(call)
    }

    /// A call through the cache and coalescing layer, or straight to the wire.
    nonisolated(nonsending) private func uninterceptedRequest(
        _ method: String, payload: [UInt8], options: RequestOptions
    ) async throws -> [UInt8] {
        guard options.cache == .networkOnly, !options.coalesces else {
            return try await cachedRequest(method, payload: payload, options: options)
        }
        return try await sendRequest(
            method, payload: payload, options: options,
            deadline: configuration.clock.now.advanced(by: options.timeout ?? configuration.defaultTimeout),
            session: core.session)
    }

    /// One request on the wire with a deadline the caller computed (the cache and coalescing layer),
    /// made in `session` (``ClientCore/session``): the core refuses it, and every attempt after
    /// the first, once another session began.
    ///
    /// A request answered ``LongLinkError/Code-swift.struct/outcomeUnknown`` (the fleet server
    /// running it stopped) is sent again under a new request id, up to twice, when the caller
    /// marked it idempotent and its deadline has not passed: under its old id the fleet answers it
    /// `UNKNOWN` for good.
    nonisolated(nonsending) func sendRequest(
        _ method: String, payload: [UInt8], options: RequestOptions, deadline: ContinuousClock.Instant,
        session: UInt64
    ) async throws -> [UInt8] {
        var attempts = 0
        while true {
            attempts += 1
            let request = PendingRequest(
                id: core.makeRequestID(), method: method, payload: payload,
                compressedPayload: compressedAhead(payload), metadata: options.metadata, deadline: deadline,
                idempotent: options.idempotent, session: session)
            do {
                return try await core.perform(request)
            } catch let error as LongLinkError where error.code == .outcomeUnknown {
                guard options.idempotent, attempts < 3, configuration.clock.now < deadline else { throw error }
            } catch let error as LongLinkError where error.code == .deadlineExceeded && !started.load(ordering: .relaxed) {
                // A call on a client nobody started waits in the offline queue for a link that never
                // comes: its deadline is the first sign, so it names the cause.
                throw LongLinkError(
                    code: .deadlineExceeded,
                    message: "\(error.message); the client was never started: call run() (or use withLongLinkClient)",
                    underlying: error)
            }
        }
    }

    /// `payload` compressed, when compression is on, the payload long enough and the current link
    /// agreed to it; nil otherwise (the payload goes as it is).
    private func compressedAhead(_ payload: [UInt8]) -> [UInt8]? {
        let compression = configuration.compression
        guard compression.isEnabled, payload.count >= compression.minimumBytes,
            core.shared.linkCompresses.load(ordering: .relaxed)
        else { return nil }
        let outgoing = compression.outgoing(payload)
        return outgoing.compression == PayloadCompressor.none ? nil : outgoing.payload
    }

    /// Sends a typed request and decodes its reply (see ``LongLinkRequest`` for the encodings).
    ///
    /// A reply that does not decode throws ``LongLinkError/Code-swift.struct/decodingFailed``, naming
    /// the method; the link is not affected.
    ///
    /// Unlike ``request(_:payload:options:)`` this runs on the global executor, so that encoding
    /// and decoding never run on the caller's actor (the main actor, say).
    public func send<Request: LongLinkRequest>(_ request: Request, options: RequestOptions = RequestOptions())
        async throws -> Request.Reply
    {
        let codec = configuration.codec
        let reply = try await self.request(
            Request.method, payload: try request.encodePayload(with: codec), options: options)
        return try Request.decodedReply(reply, codec: codec)
    }

    // MARK: Pushes

    /// Pushes on `topic` (all topics when `nil`), in the order they arrive, as an `AsyncStream`.
    ///
    /// The consumer is registered when the stream is made, so pushes that arrive before the first
    /// `next()` wait in its buffer. A reliable push is acknowledged (batched) once the stream has
    /// handed it over, and each reliable seq is handed over once. Every stream is a consumer of
    /// its own and gets every push of its topic; a reliable push is acknowledged once every live
    /// consumer that got it has taken it. Several loops over one stream share its pushes, each push
    /// going to one of them.
    ///
    /// When a consumer falls ``ClientConfiguration/pushBufferLimit`` behind, reliable pushes are left
    /// unacknowledged with the server and fetched again with `Sync` once it catches up, so none is
    /// lost and memory stays bounded. A best-effort push takes the place of the untaken one of the same
    /// conflation key (``ClientConfiguration/pushConflation``, the topic by default), and is dropped
    /// when the buffer is full. The stream ends when
    /// the client stops, when a task waiting in it is cancelled, or when it is released; pushes it
    /// never handed over go back to the server's care. It does not say why it ended: to learn that
    /// (shut down, login rejected, kicked), iterate ``throwingPushes(topic:)`` instead, which
    /// throws the reason as a ``LongLinkError``.
    public func pushes(topic: String? = nil) -> AsyncStream<Push> {
        let subscription = PushSubscription(core: core, topic: topic)
        return AsyncStream(unfolding: { await subscription.next() }, onCancel: { subscription.cancel() })
    }

    /// The pushes of ``pushes(topic:)``, with best-effort pushes conflated by `conflation` instead of
    /// ``ClientConfiguration/pushConflation`` (see ``PushConflation``).
    public func pushes(topic: String?, conflation: PushConflation) -> AsyncStream<Push> {
        let subscription = PushSubscription(core: core, topic: topic, conflation: conflation)
        return AsyncStream(unfolding: { await subscription.next() }, onCancel: { subscription.cancel() })
    }

    /// The pushes of ``pushes(topic:)``, as a sequence that throws why it ended when the client
    /// ends it: shut down, login rejected, kicked (see ``PushSequence``).
    ///
    /// `pushes(topic:)` ends the same way but silently; use this variant where the app must tell a
    /// kicked or rejected user from a normal end (the error is also what ``run()`` throws).
    public func throwingPushes(topic: String? = nil) -> PushSequence<Push> {
        PushSequence(subscription: PushSubscription(core: core, topic: topic)) { .deliver($0) }
    }

    // MARK: Observation

    /// The link's states, starting with the current one; ends when the client stops.
    public var connectionStates: ConnectionStateSequence {
        ConnectionStateSequence(core: core)
    }

    /// The link's current state.
    public var connectionState: ConnectionState {
        get async { await core.currentState }
    }

    /// The client's counters now.
    public var statistics: ClientStatistics {
        get async {
            var statistics = await core.statistics
            statistics.probes = await directory.probesMade
            return statistics
        }
    }

    // MARK: Network and app lifecycle

    /// Tells the client the network changed (Wi-Fi to cellular, VPN): a waiting reconnect happens at
    /// once with the backoff reset, and a live link is probed and replaced if it does not answer.
    public func networkDidChange() {
        let core = self.core
        core.onLoop { $0.networkDidChange() }
    }

    /// Tells the client the network changed, and which network it is on now: as
    /// ``networkDidChange()``, and an adaptive heartbeat (``HeartbeatPolicy/adaptive(_:)``) uses
    /// what it learned about `network`, proposing it on the live link at once.
    public func networkDidChange(to network: NetworkKey) {
        let core = self.core
        core.onLoop {
            $0.setNetwork(network)
            $0.networkDidChange()
        }
    }

    /// What an adaptive heartbeat learned so far, per network (nil with a fixed heartbeat).
    public var learnedHeartbeat: HeartbeatSnapshot? {
        get async { await core.learnedHeartbeat }
    }

    /// The heartbeat interval in force on the current link, or nil while there is none.
    public var heartbeatInterval: Duration? {
        get async { await core.heartbeatInForce }
    }

    /// Tells the client whether the network is metered (cellular): while it is, re-probing for a
    /// better endpoint pauses when ``Balancing/Migration/pausesOnExpensiveNetwork`` says so.
    public func setNetworkIsExpensive(_ expensive: Bool) {
        let core = self.core
        core.onLoop { $0.setNetworkIsExpensive(expensive) }
    }

    // MARK: Endpoints

    /// Replaces the endpoints at run time (a service moved). When the current link's endpoint is
    /// no longer listed, the client moves to the best new one, make before break: the new link logs
    /// in, new and queued requests go to it, and requests in flight on the old link are answered
    /// there before it closes. None is lost. An empty list is ignored.
    public func setEndpoints(_ endpoints: [Endpoint]) async {
        guard !endpoints.isEmpty else { return }
        await directory.replace(endpoints)
        let core = self.core
        core.onLoop { $0.endpointsChanged() }
    }

    /// What the client knows of each endpoint now: the last probe's round trips are not kept, so
    /// each result carries the current cost, load and state (banned or reachable).
    public var endpointStatus: [EndpointProbe] {
        get async { await directory.status() }
    }

    /// Probes `endpoints` once, at once, as the client does before connecting (connect,
    /// `Hello`/`Welcome`, ``Balancing/probePings`` pings, within ``Balancing/probeTimeout``), and
    /// says which one it would choose. `configuration` gives the probe settings, the client id,
    /// metadata, socket options and TLS settings; its endpoints are not used. A TLS configuration
    /// that cannot be loaded fails every probe with its error.
    public static func probe(_ endpoints: [Endpoint], configuration: ClientConfiguration) async -> ProbeReport {
        var configuration = configuration
        configuration.endpoints = endpoints
        configuration.endpointProvider = nil
        let loop = (configuration.eventLoopGroup ?? .shared).next()
        let directory = EndpointDirectory(configuration: configuration, loop: loop)
        do throws(LongLinkError) {
            try await directory.setTLS(
                configuration.tls.map { configuration throws(LongLinkError) in
                    try TLSContext(client: configuration)
                })
        } catch {
            return ProbeReport(
                probes: endpoints.map { EndpointProbe(endpoint: $0, state: .failed, error: error) }, chosen: nil)
        }
        return await directory.probe()
    }

    /// The app went to the background: heartbeats slow down and reconnection may pause (see
    /// ``BackgroundPolicy``).
    public func appDidEnterBackground() {
        let core = self.core
        core.onLoop { $0.setBackground(true) }
    }

    /// The app is coming to the foreground: the link is probed at once and replaced if it does not
    /// answer within ``ClientConfiguration/livenessProbeTimeout``; a paused reconnect resumes now.
    public func appWillEnterForeground() {
        let core = self.core
        core.onLoop { $0.setBackground(false) }
    }

    // MARK: Lifecycle

    /// Begins a graceful shutdown with ``ClientConfiguration/shutdownGracePeriod``; see
    /// ``shutdown(gracePeriod:)``.
    public func shutdown() {
        shutdown(gracePeriod: configuration.shutdownGracePeriod)
    }

    /// Begins a graceful shutdown: new requests fail with
    /// ``LongLinkError/Code-swift.struct/shutdown``, and so do queued ones (never written); requests
    /// in flight get up to `gracePeriod` to be answered, and then fail with the same code; then the
    /// client acknowledges what the app took, says `GoAway` and closes. ``run()`` returns when that
    /// is done, and push streams end (``PushSequence`` throws the shutdown code).
    ///
    /// Returns at once; call it from anywhere, any number of times. While a shutdown is under way,
    /// a grace period that ends sooner than the current one moves the end forward (`.zero` fails
    /// what is in flight now); one that ends later changes nothing. A negative period is `.zero`.
    public func shutdown(gracePeriod: Duration) {
        let core = self.core
        core.onLoop { $0.beginShutdown(gracePeriod: gracePeriod) }
    }

    /// Runs the supervisor until ``shutdown()``, cancellation, or a terminal error (a rejected login,
    /// `GoAway` without reconnect), which it throws. With
    /// ``ClientConfiguration/waitsForLoginAfterSessionEnd`` it stays after such an end, waiting for
    /// ``login(_:)``, and throws the last session's end only if the client shuts down before one.
    ///
    /// It has the shape of swift-service-lifecycle's `Service.run()`, so a client can run in a
    /// `ServiceGroup` as it is. Cancelling the task that runs `run()` is a shutdown without a grace
    /// period, as `shutdown(gracePeriod: .zero)`: queued and in-flight requests fail at once with
    /// ``LongLinkError/Code-swift.struct/shutdown``, the client says `GoAway` and closes, and `run()`
    /// returns without throwing. To drain in-flight calls when a service group shuts down
    /// gracefully, call ``shutdown(gracePeriod:)`` from its graceful-shutdown handler (the
    /// lifecycle guide shows how); a cancellation arriving later cuts the grace period short.
    public func run() async throws {
        guard !started.exchange(true, ordering: .relaxed) else {
            throw LongLinkError(code: .failedPrecondition, message: "run() was already called on this client")
        }
        let tls: TLSContext?
        do throws(LongLinkError) {
            try configuration.validate()
            // Loaded once: trust roots, certificates and keys are read here, not on every connect.
            tls = try configuration.tls.map { configuration throws(LongLinkError) in
                try TLSContext(client: configuration)
            }
        } catch {
            await core.terminate(error)
            await core.stopped(ConnectionState(phase: .stopped, reason: "invalid configuration", error: error))
            throw error
        }
        let core = self.core
        let reporting = startReportingMetrics()
        defer { reporting?.cancel() }
        try await withTaskCancellationHandler {
            try await Supervisor(
                core: core, configuration: configuration, directory: directory, makeRequestID: makeRequestID, tls: tls
            ).runKeepingSubscriptions()
        } onCancel: {
            core.onLoop { $0.beginShutdown(gracePeriod: .zero) }
        }
    }
}
