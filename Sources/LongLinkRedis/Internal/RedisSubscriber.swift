internal import LongLinkTransport
internal import LongLinkWire

/// Pub/sub on a connection of its own, kept open by a supervising task that reconnects with
/// backoff and subscribes again to every channel.
///
/// Events go to a callback rather than a buffered stream, so that none is dropped: messages are
/// delivered on the connection's loop (the callback must be cheap and must not block), in the order
/// Redis sent them. Pub/sub is at most once: messages published while the connection was down are
/// lost. So after every (re)connection, once Redis has confirmed every subscription, the callback
/// gets ``Event/subscribed``: the owner then re-reads what it may have missed, knowing that
/// anything published from then on reaches it.
///
/// Subscriptions change through ``update(_:wanted:)``, which asks the owner whether it wants the
/// channel at the moment the actor acts: calls are serialized here and their commands leave in that
/// order, so that the last call leaves the truth in place whatever order callers raced in.
///
/// `sharded`: the channels are a cluster node's sharded ones (`SSUBSCRIBE`, one command per
/// channel since each may be in another slot), and the node's unsubscribing of a channel whose
/// slot moved away is reported (``Event/unsubscribed(channel:)``).
actor RedisSubscriber: RedisNoticeSubscriber {
    enum Event: Sendable, Equatable {
        /// Every channel is subscribed (again): what was published before may have been missed.
        case subscribed
        /// A message on `channel`.
        case message(channel: String, payload: [UInt8])
        /// Sharded: the connection closed, or an attempt to open it failed; the subscriber tries
        /// again after its backoff.
        case disconnected
        /// Sharded: Redis confirmed an unsubscribing of `channel`, asked for or not (its slot moved).
        case unsubscribed(channel: String)
    }

    private let configuration: RedisConfiguration
    private let loop: EventLoop
    private let sharded: Bool
    private let onEvent: @Sendable (Event) -> Void
    /// By bytes: channels of two spellings of one name in Unicode are two channels in Redis.
    private var channels: Set<PrincipalKey>
    private var connection: RedisConnection?
    private var supervisor: Task<Void, Never>?
    private var isShutDown = false
    /// Whether the first connection attempt has ended, either way, and who waits for it.
    private var firstAttemptEnded = false
    private var startWaiters: [CheckedContinuation<Void, Never>] = []

    /// `onEvent` is called on the connection's loop for messages and from the actor for
    /// ``Event/subscribed``; never concurrently with itself for messages.
    init(
        configuration: RedisConfiguration, channels: Set<String> = [], loop: EventLoop = EventLoopGroup.shared.next(),
        sharded: Bool = false, onEvent: @escaping @Sendable (Event) -> Void
    ) {
        self.configuration = configuration
        self.sharded = sharded
        self.channels = Set(channels.map(PrincipalKey.init))
        self.loop = loop
        self.onEvent = onEvent
    }

    /// Starts the supervising task (once) and returns when its first connection attempt has
    /// ended: connected with every channel confirmed, or failed (bounded by the connect and command
    /// timeouts). So an ``update(_:wanted:)`` right after start is confirmed when Redis is up.
    func start() async {
        if supervisor == nil, !isShutDown {
            supervisor = Task { await supervise() }
        }
        guard !firstAttemptEnded else { return }
        await withCheckedContinuation { startWaiters.append($0) }
    }

    private func endFirstAttempt() {
        guard !firstAttemptEnded else { return }
        firstAttemptEnded = true
        let waiters = startWaiters
        startWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    /// Subscribes to `channel` (now when connected, and after every reconnection).
    func subscribe(_ channel: String) async {
        await update(channel) { true }
    }

    /// Unsubscribes from `channel`.
    func unsubscribe(_ channel: String) async {
        await update(channel) { false }
    }

    /// Subscribes to `channel` or unsubscribes from it as `wanted` says, read when the actor acts.
    ///
    /// Returns once Redis has confirmed every command sent so far on the connection (a `PING`
    /// answered after them), this one included, or at once when disconnected: then the next
    /// connection subscribes to every wanted channel and reports ``Event/subscribed``. A `PING`
    /// that goes unanswered closes the connection (after ``RedisConfiguration/commandTimeout``),
    /// which leads to the same.
    func update(_ channel: String, wanted: @escaping @Sendable () -> Bool) async {
        guard !isShutDown else { return }
        // No suspension between reading `wanted` and posting the command: the wire order is the
        // order of the reads.
        let command: String
        if wanted() {
            command = channels.insert(PrincipalKey(channel)).inserted ? (sharded ? "SSUBSCRIBE" : "SUBSCRIBE") : ""
        } else {
            command = channels.remove(PrincipalKey(channel)) != nil ? (sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE") : ""
        }
        guard let connection, !connection.isClosed else { return }
        if !command.isEmpty { connection.post([RedisCommand(command, channel)]) }
        // Even with nothing sent: an earlier caller's SUBSCRIBE of this channel may be unconfirmed.
        _ = try? await connection.send([RedisCommand("PING")], timeout: configuration.commandTimeout)
    }

    /// Whether a connection is open (its subscriptions may still be unconfirmed).
    var isConnected: Bool { connection.map { !$0.isClosed } ?? false }

    /// Stops the task and closes the connection; no event follows the ones under way.
    func shutdown() {
        isShutDown = true
        supervisor?.cancel()
        supervisor = nil
        endFirstAttempt()
        connection?.close()
        connection = nil
    }

    private func supervise() async {
        var backoff = ReconnectBackoff(
            initial: configuration.initialReconnectDelay, maximum: configuration.maximumReconnectDelay)
        while !Task.isCancelled {
            let closed = OneShot<Void>()
            let (onEvent, sharded) = (onEvent, sharded)
            do throws(LongLinkError) {
                let opened = try await RedisConnection.open(configuration, on: loop) { connection in
                    connection.onPush = { push in Self.deliver(push, sharded: sharded, to: onEvent) }
                    connection.onClose = { _ in closed.resume(()) }
                }
                guard !isShutDown else {
                    opened.close()
                    endFirstAttempt()
                    return
                }
                connection = opened
                // Posted before any suspension, so that an `update` after this one goes after it.
                if sharded {
                    opened.post(channels.map(\.name).sorted().map { RedisCommand("SSUBSCRIBE", $0) })
                } else {
                    for batch in channels.map(\.name).sorted().chunked(into: 1024) {
                        opened.post([RedisCommand([Array("SUBSCRIBE".utf8)] + batch.map { Array($0.utf8) })])
                    }
                }
                // Replies keep their order with the pushes before them: once PING is answered,
                // every subscription has been confirmed.
                _ = try await opened.send([RedisCommand("PING")], timeout: configuration.commandTimeout)
                backoff.succeeded()
                if !isShutDown { onEvent(.subscribed) }
                endFirstAttempt()
                if Task.isCancelled { opened.close() }
                _ = await closed.value()
                if !isShutDown, sharded { onEvent(.disconnected) }
            } catch {
                connection?.close()
                backoff.failed(at: .now, jitter: Double.random(in: 0.5...1))
                endFirstAttempt()
                if !isShutDown, sharded { onEvent(.disconnected) }
            }
            connection = nil
            guard let notBefore = backoff.notBefore else { continue }
            try? await Task.sleep(until: notBefore, clock: .continuous)
        }
    }

    /// Delivers `["message", channel, payload]` pushes (`smessage` when sharded) and, sharded,
    /// `["sunsubscribe", channel, count]`; other confirmations are not events.
    private static func deliver(_ push: RESPValue, sharded: Bool, to onEvent: @Sendable (Event) -> Void) {
        guard let parts = push.elements, parts.count == 3, let kind = parts[0].string, let channel = parts[1].string
        else { return }
        switch kind {
        case "message" where !sharded, "smessage" where sharded:
            if let payload = parts[2].bytes { onEvent(.message(channel: channel, payload: payload)) }
        case "sunsubscribe" where sharded:
            onEvent(.unsubscribed(channel: channel))
        default:
            break
        }
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements: one command per slice keeps each bounded.
    fileprivate func chunked(into size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
