internal import LongLinkTransport
internal import LongLinkWire
internal import Synchronization

/// One connection to Redis: writes pipelined commands and matches replies to them in order.
///
/// Everything but ``send(_:timeout:)``, ``close()`` and ``isClosed`` runs on the connection's loop.
/// Commands queued in one loop iteration leave in one flush. A batch that is not answered within
/// its timeout fails with `unavailable` and closes the connection: the replies still owed can no
/// longer be matched with confidence to their callers, and Redis may be stuck, so the next command
/// opens a fresh connection. Whichever way the connection ends, every waiting batch fails once.
/// RESP3 pushes (`>`) go to ``onPush`` and never consume a reply.
final class RedisConnection: ConnectionHandler, @unchecked Sendable {
    private struct Pending {
        let promise: OneShot<Result<[RESPValue], LongLinkError>>
        let name: String
        var remaining: Int
        var replies: [RESPValue] = []
        var timer: EventLoopTimer?
    }

    let connection: Connection
    let loop: EventLoop
    private let closed = Atomic<Bool>(false)

    // Loop thread only.
    private var parser: RESPParser
    private var pending: [Pending] = []
    private var head = 0
    private var closeError: LongLinkError?
    /// Called on the loop with each RESP3 push.
    var onPush: ((RESPValue) -> Void)?
    /// Called on the loop once the connection has closed.
    var onClose: ((LongLinkError?) -> Void)?

    /// `loop` is the one `connection` runs on, passed in rather than read from
    /// `connection.eventLoop`: this runs off the loop, and that property was written on it.
    private init(connection: Connection, loop: EventLoop, limits: RESPParser.Limits) {
        self.connection = connection
        self.loop = loop
        self.parser = RESPParser(limits: limits)
    }

    /// Connects (with TLS when ``RedisConfiguration/tls`` is set), says `HELLO 3` (with `AUTH`
    /// when configured) and `SELECT`s the database, all within ``RedisConfiguration/connectTimeout``.
    /// `configure` runs on the loop before the first byte is read (for ``onPush``).
    ///
    /// A TLS failure keeps its `tlsFailure` code and a refused login its own: neither is an outage
    /// that waiting would end.
    static func open(
        _ configuration: RedisConfiguration, on loop: EventLoop, limits: RESPParser.Limits = .init(),
        configure: @escaping @Sendable (RedisConnection) -> Void = { _ in }
    ) async throws(LongLinkError) -> RedisConnection {
        var options = ConnectionOptions()
        options.connectTimeout = configuration.connectTimeout
        let where_ = "\(configuration.host):\(configuration.port)"
        // Made per connection rather than once: a CA file replaced on disk counts from the next connect.
        let tls = try configuration.tls.map { tls throws(LongLinkError) in try TLSContext(client: tls) }
        let connection: Connection
        do {
            connection = try await Connection.connect(
                to: .tcp(host: configuration.host, port: configuration.port), options: options, tls: tls, on: loop)
        } catch {
            if error.code == .tlsFailure {
                throw LongLinkError(
                    code: .tlsFailure, message: "TLS with Redis at \(where_) failed: \(error.message)",
                    underlying: error.underlying)
            }
            throw .redisUnavailable("cannot connect to Redis at \(where_): \(error.message)", cause: error)
        }
        let redis = RedisConnection(connection: connection, loop: loop, limits: limits)
        loop.execute {
            configure(redis)
            connection.start(handler: redis)
        }
        var hello = RedisCommand("HELLO", "3")
        if let password = configuration.password {
            hello.arguments += [
                Array("AUTH".utf8), Array((configuration.username ?? "default").utf8), Array(password.utf8),
            ]
        }
        var commands = [hello]
        if configuration.database != 0 { commands.append(RedisCommand("SELECT", String(configuration.database))) }
        do throws(LongLinkError) {
            let replies = try await redis.send(commands, timeout: configuration.connectTimeout)
            if let text = replies.first?.errorText {
                throw LongLinkError.redisLoginRefused(text, configuration: configuration)
            }
            for (command, reply) in zip(commands, replies) { _ = try reply.checked(command.name) }
        } catch {
            redis.close()
            throw error
        }
        return redis
    }

    /// True once the connection closed or a close was asked for (any thread).
    var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Closes the connection; waiting batches fail with `unavailable` (any thread).
    func close() {
        closed.store(true, ordering: .releasing)
        // Hop to the loop here: `Connection.close` off the loop would read its `eventLoop` there.
        loop.execute { [connection] in
            connection.close(.immediately, error: .redisUnavailable("the Redis connection was closed"))
        }
    }

    /// Writes `commands` whose answers come as pushes (`SUBSCRIBE`, `UNSUBSCRIBE`), without
    /// waiting: queued on the loop before this returns, so that commands posted one after another
    /// (by an actor) leave in that order. Dropped when the connection is closed.
    func post(_ commands: [RedisCommand]) {
        loop.execute { [self] in
            guard !connection.isClosed else { return }
            connection.write { bytes in
                for command in commands { command.encode(into: &bytes) }
            }
        }
    }

    /// Writes `commands` in one go and returns their replies in order, error replies included.
    /// `expectReplies: false` writes commands whose answers come as pushes (`SUBSCRIBE`).
    func send(
        _ commands: [RedisCommand], timeout: Duration, expectReplies: Bool = true
    ) async throws(LongLinkError) -> [RESPValue] {
        let promise = OneShot<Result<[RESPValue], LongLinkError>>()
        let name = commands.first?.name ?? ""
        let result = await withTaskCancellationHandler {
            loop.execute { [self] in
                enqueue(commands, promise: promise, name: name, timeout: timeout, expectReplies: expectReplies)
            }
            return await promise.value()
        } onCancel: {
            // The entry stays queued so later replies still match; its reply is dropped.
            promise.resume(
                .failure(LongLinkError(code: .cancelled, message: "the Redis command \(name) was cancelled")))
        }
        return try result.get()
    }

    private func enqueue(
        _ commands: [RedisCommand], promise: OneShot<Result<[RESPValue], LongLinkError>>, name: String,
        timeout: Duration,
        expectReplies: Bool
    ) {
        guard !connection.isClosed else {
            promise.resume(.failure(closeError ?? .redisUnavailable("the Redis connection is closed")))
            return
        }
        connection.write { bytes in
            for command in commands { command.encode(into: &bytes) }
        }
        guard expectReplies, !commands.isEmpty else {
            promise.resume(.success([]))
            return
        }
        var entry = Pending(promise: promise, name: name, remaining: commands.count)
        entry.timer = loop.scheduleTimer(after: timeout) { [self] in
            let error = LongLinkError.redisUnavailable("Redis did not answer \(name) within \(timeout)")
            if promise.resume(.failure(error)) {
                closed.store(true, ordering: .releasing)
                connection.close(.immediately, error: error)
            }
        }
        pending.append(entry)
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        parser.append(bytes)
        while true {
            let value: RESPValue
            do {
                guard let next = try parser.next() else { return }
                value = next
            } catch {
                closed.store(true, ordering: .releasing)
                connection.close(.immediately, error: .redisProtocol(error))
                return
            }
            if case .push = value.unattributed {
                onPush?(value)
                continue
            }
            guard head < pending.count else {
                // A reply nobody asked for: the stream is out of step.
                closed.store(true, ordering: .releasing)
                connection.close(.immediately, error: .redisUnexpected("(no command)", value))
                return
            }
            pending[head].replies.append(value)
            pending[head].remaining -= 1
            if pending[head].remaining == 0 {
                let entry = pending[head]
                pending[head] = Pending(promise: entry.promise, name: "", remaining: 0)
                head += 1
                if head == pending.count {
                    pending.removeAll(keepingCapacity: true)
                    head = 0
                } else if head > 1024, head * 2 > pending.count {
                    pending.removeFirst(head)
                    head = 0
                }
                if let timer = entry.timer { loop.cancelTimer(timer) }
                entry.promise.resume(.success(entry.replies))
            }
        }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
        closed.store(true, ordering: .releasing)
        let failure = LongLinkError.redisUnavailable(
            "the Redis connection closed" + (error.map { ": \($0.message)" } ?? ""), cause: error)
        closeError = failure
        let waiting = pending[head...]
        pending = []
        head = 0
        for entry in waiting {
            if let timer = entry.timer { loop.cancelTimer(timer) }
            entry.promise.resume(.failure(failure))
        }
        onPush = nil
        let onClose = self.onClose
        self.onClose = nil
        onClose?(error)
    }
}
