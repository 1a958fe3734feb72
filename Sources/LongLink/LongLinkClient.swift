@_exported import LongLinkTransport
@_exported import LongLinkWire
import Synchronization

/// A client of a LongLink server: request/response with the feel of HTTP over one persistent
/// connection, server pushes as an `AsyncSequence`, and a supervisor that keeps the link alive.
///
/// ```swift
/// try await withLongLinkClient(configuration: .init(endpoints: [.tcp(host: "quotes.example", port: 7000)])) { client in
///     let room = try await client.send(EnterRoom(id: 42))     // suspends until *its* reply
///     for await alert in client.pushes(topic: "alerts") { show(alert) }   // acked for you
/// }
/// ```
///
/// Each request suspends on a `CheckedContinuation` kept by an actor (keyed by request id) that runs
/// on the connection's event loop. The request's deadline is computed once, so that it covers
/// queueing, reconnects and resends, and is raced against the reply: by one deadline heap with a
/// single timer (the default), or by a task group per request (``DeadlineStrategy/taskGroup``). ``run()`` is the supervisor: it
/// connects, logs in, replays subscriptions, sends `Sync`, releases queued requests, and reconnects
/// with backoff after every failure until ``shutdown()`` or a terminal error.
public final class LongLinkClient: Sendable {
    /// The configuration the client runs with.
    public let configuration: ClientConfiguration
    let core: ClientCore
    private let nextRequestID: Atomic<UInt64>
    private let started = Atomic<Bool>(false)

    /// Creates a client. Nothing connects until ``run()``.
    public init(configuration: ClientConfiguration) {
        self.configuration = configuration
        let loop = (configuration.eventLoopGroup ?? .shared).next()
        self.core = ClientCore(loop: loop, configuration: configuration)
        // Request ids are unique per client_id for the life of the client: a random start makes a
        // restarted app with a stable client id unlikely to reuse an id the server remembers.
        // Below 2^46 (14 digits), so ids stay Swift small strings (15 bytes) for ~9 * 10^14
        // requests: no heap allocation to write one or to read one back from a reply.
        self.nextRequestID = Atomic(UInt64.random(in: 1...(UInt64(1) << 46)))
    }

    // MARK: Requests

    private var makeRequestID: @Sendable () -> UInt64 {
        { [self] in nextRequestID.add(1, ordering: .relaxed).newValue }
    }

    /// Sends `payload` to `method` and returns the reply's payload.
    ///
    /// Throws ``LongLinkError`` with the server's status when the reply is an error, with
    /// ``LongLinkError/Code-swift.struct/deadlineExceeded`` when the timeout passes (queueing and
    /// reconnects included), ``LongLinkError/Code-swift.struct/resourceExhausted`` when the offline
    /// queue is full, ``LongLinkError/Code-swift.struct/connectionLost`` when the link dropped after
    /// the request was written and it could not be resent safely; and `CancellationError` when the
    /// calling task is cancelled (the server is told with `Cancel`).
    ///
    /// Runs on the caller's executor (`nonisolated(nonsending)`): it only hands the call to the
    /// client's loop and suspends, so a caller on an actor pays no hop to the global executor and
    /// back, and the reply resumes it where it called.
    nonisolated(nonsending) public func request(
        _ method: String, payload: [UInt8] = [], options: RequestOptions = RequestOptions()
    ) async throws -> [UInt8] {
        let call = PendingCall(
            id: nextRequestID.add(1, ordering: .relaxed).newValue, method: method, payload: payload,
            metadata: options.metadata,
            deadline: configuration.clock.now.advanced(by: options.timeout ?? configuration.defaultTimeout),
            idempotent: options.idempotent)
        return try await core.perform(call)
    }

    /// Sends a typed request and decodes its reply with the configured codec.
    ///
    /// Unlike ``request(_:payload:options:)`` this runs on the global executor, so that encoding
    /// and decoding never run on the caller's actor (the main actor, say).
    public func send<Request: LongLinkRequest>(_ request: Request, options: RequestOptions = RequestOptions())
        async throws -> Request.Reply
    {
        let codec = configuration.codec
        let reply = try await self.request(Request.method, payload: try codec.encode(request), options: options)
        return try codec.decode(Request.Reply.self, from: reply)
    }

    // MARK: Pushes

    /// Pushes on `topic` (all topics when `nil`), in the order they arrive. Reliable pushes are
    /// acknowledged once this sequence has returned them; each reliable seq is returned once.
    /// The sequence ends when the client stops or the consuming task is cancelled.
    public func pushes(topic: String? = nil) -> PushSequence {
        PushSequence(core: core, topic: topic)
    }

    /// Pushes on `topic` decoded as `T` with the configured codec; undecodable pushes are skipped
    /// (and logged).
    public func pushes<T: Decodable & Sendable>(topic: String, as type: T.Type) -> some AsyncSequence<T, Never> {
        let codec = configuration.codec
        let logger = configuration.logger
        return pushes(topic: topic).compactMap { push -> T? in
            do {
                return try codec.decode(T.self, from: push.payload)
            } catch {
                logger?(LogRecord(level: .warning, message: "a push on \(push.topic) did not decode as \(T.self)"))
                return nil
            }
        }
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
        get async { await core.statistics }
    }

    /// Callers the deadline timer has resumed with a timeout so far, read without a hop to the
    /// loop (for `longlink bench timeouts`: a mass expiry resumes its callers off the loop).
    package var expiredCallersResumed: Int {
        core.expiredCallersResumed.load(ordering: .relaxed)
    }

    /// Callers whose replies the loop handed to the global executor to resume (reads of
    /// ``ResumeBatch/offLoopThreshold`` replies or more), read without a hop to the loop (for tests).
    package var callersResumedOffLoop: Int {
        core.callersResumedOffLoop.load(ordering: .relaxed)
    }

    /// Callers the deadline timer has failed so far; ``expiredCallersResumed`` reaches it once
    /// every one of them is resumed (for `longlink bench timeouts`).
    package var expiredByTimer: Int {
        core.expiredByTimer.load(ordering: .relaxed)
    }

    // MARK: Network and app lifecycle

    /// Tells the client the network changed (Wi-Fi to cellular, VPN): a waiting reconnect happens at
    /// once with the backoff reset, and a live link is probed and replaced if it does not answer.
    public func networkDidChange() {
        let core = self.core
        core.loop.execute { core.assumeIsolated { $0.networkDidChange() } }
    }

    /// The app went to the background: heartbeats slow down and reconnection may pause (see
    /// ``BackgroundPolicy``).
    public func appDidEnterBackground() {
        let core = self.core
        core.loop.execute { core.assumeIsolated { $0.setBackground(true) } }
    }

    /// The app is coming to the foreground: the link is probed at once and replaced if it does not
    /// answer within ``ClientConfiguration/livenessProbeTimeout``; a paused reconnect resumes now.
    public func appWillEnterForeground() {
        let core = self.core
        core.loop.execute { core.assumeIsolated { $0.setBackground(false) } }
    }

    // MARK: Lifecycle

    /// Begins a graceful shutdown: new requests fail, queued ones fail with
    /// ``LongLinkError/Code-swift.struct/shutdown``, requests in flight get up to
    /// ``ClientConfiguration/shutdownGracePeriod`` to be answered, then the client says `GoAway` and
    /// closes. ``run()`` returns when that is done.
    public func shutdown() {
        let core = self.core
        let grace = configuration.shutdownGracePeriod
        core.loop.execute { core.assumeIsolated { $0.beginShutdown(gracePeriod: grace) } }
    }

    /// Runs the supervisor until ``shutdown()``, cancellation, or a terminal error (a rejected login,
    /// `GoAway` without reconnect), which it throws.
    ///
    /// Cancelling the task that runs `run()` shuts down without a grace period.
    public func run() async throws {
        guard !started.exchange(true, ordering: .relaxed) else {
            throw LongLinkError(code: .failedPrecondition, message: "run() was already called on this client")
        }
        do {
            try configuration.validate()
        } catch {
            await core.terminate(error)
            await core.stopped(ConnectionState(phase: .stopped, reason: "invalid configuration", error: error))
            throw error
        }
        let core = self.core
        try await withTaskCancellationHandler {
            try await Supervisor(core: core, configuration: configuration, makeRequestID: makeRequestID).run()
        } onCancel: {
            core.loop.execute { core.assumeIsolated { $0.beginShutdown(gracePeriod: .zero) } }
        }
    }
}
