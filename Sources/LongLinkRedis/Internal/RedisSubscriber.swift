internal import LongLinkTransport
internal import LongLinkWire

/// Pub/sub on a connection of its own, kept open by a supervising task that reconnects with
/// backoff and subscribes again to every channel.
///
/// Pub/sub is at most once: messages published while the connection was down are lost. So after
/// every (re)connection, once Redis has confirmed every subscription, ``events`` yields
/// ``Event/subscribed``: a consumer then re-reads what it may have missed (the streams), knowing
/// that anything published from then on reaches it. Messages beyond the buffer are dropped as
/// well; consumers notice by a gap in the seqs.
actor RedisSubscriber {
    enum Event: Sendable, Equatable {
        /// Every channel is subscribed (again): what was published before may have been missed.
        case subscribed
        /// A message on `channel`.
        case message(channel: String, payload: [UInt8])
    }

    nonisolated let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let configuration: RedisConfiguration
    private let loop: EventLoop
    private var channels: Set<String>
    private var connection: RedisConnection?
    private var supervisor: Task<Void, Never>?

    init(
        configuration: RedisConfiguration, channels: Set<String> = [], loop: EventLoop = EventLoopGroup.shared.next(),
        buffer: Int = 4096
    ) {
        self.configuration = configuration
        self.channels = channels
        self.loop = loop
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(buffer))
    }

    /// Starts the supervising task (once).
    func start() {
        guard supervisor == nil else { return }
        supervisor = Task { await supervise() }
    }

    /// Subscribes to `channel` now (when connected) and after every reconnection.
    func subscribe(_ channel: String) async {
        guard channels.insert(channel).inserted, let connection else { return }
        _ = try? await connection.send(
            [RedisCommand("SUBSCRIBE", channel)], timeout: configuration.commandTimeout, expectReplies: false)
    }

    /// Stops the task, closes the connection and finishes ``events``.
    func shutdown() {
        supervisor?.cancel()
        supervisor = nil
        connection?.close()
        connection = nil
        continuation.finish()
    }

    private func supervise() async {
        var backoff = ReconnectBackoff(
            initial: configuration.initialReconnectDelay, maximum: configuration.maximumReconnectDelay)
        while !Task.isCancelled {
            let closed = OneShot<Void>()
            let continuation = continuation
            do throws(LongLinkError) {
                let opened = try await RedisConnection.open(configuration, on: loop) { connection in
                    connection.onPush = { push in Self.deliver(push, to: continuation) }
                    connection.onClose = { _ in closed.resume(()) }
                }
                connection = opened
                if !channels.isEmpty {
                    _ = try await opened.send(
                        [RedisCommand([Array("SUBSCRIBE".utf8)] + channels.sorted().map { Array($0.utf8) })],
                        timeout: configuration.commandTimeout, expectReplies: false)
                }
                // Replies keep their order with the pushes before them: once PING is answered,
                // every subscription has been confirmed.
                _ = try await opened.send([RedisCommand("PING")], timeout: configuration.commandTimeout)
                backoff.succeeded()
                continuation.yield(.subscribed)
                if Task.isCancelled { opened.close() }
                _ = await closed.value()
            } catch {
                connection?.close()
                backoff.failed(at: .now, jitter: Double.random(in: 0.5...1))
            }
            connection = nil
            guard let notBefore = backoff.notBefore else { continue }
            try? await Task.sleep(until: notBefore, clock: .continuous)
        }
    }

    /// Yields `["message", channel, payload]` pushes; confirmations and others are not events.
    private static func deliver(_ push: RESPValue, to continuation: AsyncStream<Event>.Continuation) {
        guard let parts = push.elements, parts.count == 3, parts[0].string == "message",
            let channel = parts[1].string, let payload = parts[2].bytes
        else { return }
        continuation.yield(.message(channel: channel, payload: payload))
    }
}
