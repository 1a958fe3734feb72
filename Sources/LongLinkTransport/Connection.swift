import LongLinkCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A stream socket (TCP or Unix-domain) driven by one ``EventLoop``.
///
/// Get one from ``connect(to:options:on:)`` or from a ``Listener``'s `onAccept`, then install a
/// ``ConnectionHandler`` with ``start(handler:)``; reading starts only then, so no bytes are lost before.
///
/// Writing: ``write(_:)`` and ``write(encoding:)`` queue bytes without a system call; the loop flushes every
/// connection written to at the end of its iteration (or at once with ``flush()``), handing all queued chunks
/// to one vectored write. When the queued bytes reach the high watermark ``isWritable`` turns false, and back
/// at the low watermark true again; the handler hears of both. ``send(_:)`` is the form for other threads and
/// for tasks: it waits while the connection is not writable.
///
/// Closing: whichever way the connection ends (the peer closes or resets it, an I/O error, ``close(_:error:)``,
/// shutdown of the loop), the handler's `didCloseWith` is called exactly once, every waiting `send` throws once,
/// later writes are ignored, and the handler is released.
///
/// Members marked "loop thread only" must be called on ``eventLoop`` (checked in debug builds).
public final class Connection: Hashable, @unchecked Sendable {
    /// The loop that runs this connection's I/O and callbacks.
    public let eventLoop: EventLoop
    /// A process-unique number.
    public let id: UInt64
    /// This side's address (`getsockname`), when known.
    public let localAddress: SocketAddress?
    /// The peer's address (`getpeername`), when known.
    public let remoteAddress: SocketAddress?

    let options: ConnectionOptions

    private static let nextID = Atomic<UInt64>(1)

    enum State {
        case open
        /// A graceful close is writing what is queued; the associated error is the one to report.
        case closing(LongLinkError?)
        /// Everything was written and the write side shut down; the peer's late bytes are read and
        /// dropped until it closes too (or the graceful timeout passes). Closing the socket while
        /// bytes still arrive would make the kernel reset it, and a reset makes the peer's kernel
        /// discard what it has not read yet: our last frames, a `GoAway` among them.
        case lingering(LongLinkError?)
        case closed
    }

    struct SendWaiter {
        var bytes: [UInt8]
        var promise: OneShot<Result<Void, LongLinkError>>
    }

    // Loop thread only.
    var fd: Int32
    var resourceID: UInt64 = 0
    var state = State.open
    var handler: (any ConnectionHandler)?
    var handlerInstalled = false
    var closeDelivered = false
    var closeReason: LongLinkError?
    var readingPaused = false
    var interest: IOEvents = []
    var awaitingWritable = false
    /// An eager write came up short in this iteration (see ``writeEagerly()``).
    var eagerWritesStalled = false
    var writeQueue = WriteQueue()
    var writable = true
    var reportedWritable = true
    var callbackDepth = 0
    var sendWaiters: [SendWaiter] = []
    var sendWaitersHead = 0
    var gracefulTimer: EventLoopTimer?
    /// True while the connection is in its loop's flush list.
    var inFlushList = false
    /// Debug counters.
    var statistics = ConnectionStatistics()
    /// The TLS session of a TLS connection (see `Connection+TLS.swift`); `writeQueue` then holds
    /// plaintext and `cipherQueue` what the socket is to get.
    var tls: TLSSession?
    var cipherQueue = WriteQueue()
    /// Told once when the TLS handshake ends (nil: established); set until then.
    var tlsHandshakeCompletion: ((LongLinkError?) -> Void)?
    var tlsHandshakeTimer: EventLoopTimer?
    /// True when the TLS peer closed the TCP connection without `close_notify` (read in
    /// `didCloseWith`, on the loop, to tell a message cut short from a close between messages).
    package internal(set) var tlsEndedWithoutCloseNotify = false
    /// The subject (RFC 2253) and key pin of the certificate the TLS peer presented, set when the
    /// handshake ends; nil for a plain connection or a peer without a certificate. Loop thread only.
    package internal(set) var tlsPeerCertificate: (subject: String, pin: TLSPublicKeyPin)?

    /// How many `send`s wait for writability (tests and debugging).
    var waitingSendCount: Int {
        sendWaiters.count - sendWaitersHead
    }

    private init(fd: Int32, eventLoop: EventLoop, options: ConnectionOptions) {
        self.fd = fd
        self.eventLoop = eventLoop
        self.options = options
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        self.localAddress = Sys.localAddress(fd)
        self.remoteAddress = Sys.remoteAddress(fd)
    }

    /// Wraps a connected, non-blocking socket and registers it with `eventLoop` (loop thread only). Takes
    /// ownership of `fd`: it is closed when this throws.
    static func adopt(fd: Int32, on eventLoop: EventLoop, options: ConnectionOptions) throws(LongLinkError)
        -> Connection
    {
        assert(eventLoop.inEventLoop)
        let connection = Connection(fd: fd, eventLoop: eventLoop, options: options)
        guard let resourceID = eventLoop.adopt(connection) else {
            connection.abandon()
            throw LongLinkError.loopShutDown()
        }
        connection.resourceID = resourceID
        do {
            try eventLoop.selector.add(fd: fd, id: resourceID, interest: [])
        } catch {
            eventLoop.release(resourceID)
            connection.abandon()
            throw error
        }
        if options.noDelay, connection.localAddress.map({ !$0.isUnixDomain }) ?? false {
            Sys.setNoDelay(fd, true)
        }
        return connection
    }

    /// Closes the descriptor of a connection that never made it into service.
    func abandon() {
        state = .closed
        closeDelivered = true
        Sys.close(fd)
        fd = -1
    }

    /// Connects to `endpoint` and returns the connection, running on `loop`.
    ///
    /// Resolves a host name first (see ``Resolver``), then tries each address in order, all within
    /// ``ConnectionOptions/connectTimeout``. Errors: `connectionRefused` (also for a Unix path with no socket
    /// file or a full accept queue), `hostUnreachable`, `connectTimeout`,
    /// `addressResolutionFailed`, `invalidConfiguration` (bad options, port or path), `shutdown` (the loop has
    /// stopped), `cancelled` (the calling task was cancelled), `ioFailure` for other system errors. When several
    /// addresses fail, the last address's error is thrown.
    public static func connect(
        to endpoint: Endpoint, options: ConnectionOptions = .init(), on loop: EventLoop
    ) async throws(LongLinkError) -> Connection {
        try await connect(to: endpoint, options: options, tls: nil, on: loop)
    }

    /// Connects as ``connect(to:options:on:)`` does, then, with `tls`, runs the TLS handshake
    /// within the same ``ConnectionOptions/connectTimeout``: the connection is returned established,
    /// or the call throws a `tlsFailure` error whose cause is a ``TLSFailure``.
    package static func connect(
        to endpoint: Endpoint, options: ConnectionOptions = .init(), tls: TLSContext?, on loop: EventLoop
    ) async throws(LongLinkError) -> Connection {
        try options.validate()
        let attempt = ConnectAttempt(endpoint: endpoint, options: options, tls: tls, loop: loop)
        let result = await withTaskCancellationHandler {
            await attempt.run()
        } onCancel: {
            attempt.cancel()
        }
        return try result.get()
    }

    // MARK: - Handler

    /// Installs `handler` and starts reading. Loop thread only; call once.
    ///
    /// When the connection closed before a handler was installed, `didCloseWith` follows right after this
    /// call returns.
    public func start(handler: any ConnectionHandler) {
        precondition(eventLoop.inEventLoop, "Connection.start(handler:) must be called on the connection's loop")
        precondition(!handlerInstalled, "Connection.start(handler:) called twice")
        handlerInstalled = true
        self.handler = handler
        switch state {
        case .open:
            updateInterest()
            if tls != nil { scheduleTLSRead() }
        case .closing, .lingering:
            break
        case .closed:
            eventLoop.executeLocal { [self] in
                deliverClose()
            }
        }
    }

    func deliverClose() {
        guard !closeDelivered, let handler else {
            return
        }
        closeDelivered = true
        self.handler = nil
        handler.connection(self, didCloseWith: closeReason)
    }

    // MARK: - Writing

    /// Queues `bytes` for writing (no system call yet). Ignored once the connection is closed or closing.
    /// Loop thread only.
    ///
    /// Small writes are copied into a shared chunk; large arrays are queued without a copy.
    public func write(_ bytes: [UInt8]) {
        assert(eventLoop.inEventLoop, "Connection.write must be called on the connection's loop")
        guard case .open = state else {
            return
        }
        writeQueue.append(bytes)
        didEnqueue()
    }

    /// Lets `body` append bytes straight into the tail of the write queue (for encoders that write in
    /// place). `body` must only append. Ignored once the connection is closed or closing. Loop thread only.
    public func write(encoding body: (inout [UInt8]) -> Void) {
        assert(eventLoop.inEventLoop, "Connection.write must be called on the connection's loop")
        guard case .open = state else {
            return
        }
        writeQueue.append(encoding: body)
        didEnqueue()
    }

    func didEnqueue() {
        if writable && queuedBytes >= options.writeBufferHighWatermark {
            writable = false
        }
        if writeQueue.count >= options.eagerFlushBytes { writeEagerly() }
        scheduleFlush()
    }

    /// One vectored write of what is queued, in the middle of the loop's iteration (see
    /// ``ConnectionOptions/eagerFlushBytes``). Anything else (a partial write, `EAGAIN`, an error,
    /// writability changes) is left to the flush at the end of the iteration, so that a handler
    /// that writes is never re-entered from its own `write` call.
    func writeEagerly() {
        guard fd >= 0, !awaitingWritable, !eagerWritesStalled, case .open = state else { return }
        if tls != nil {
            encryptQueued()
            guard fd >= 0 else { return }
        }
        let (requested, written, _) = writeQueuedBytes()
        // The kernel took less than all (or failed): no more eager tries before the loop's flush,
        // which would only repeat the system call for nothing.
        if written < requested { eagerWritesStalled = true }
    }

    /// One vectored write of the queue's head: the bytes offered, the bytes the kernel took (taken
    /// off the queue and counted; negative on failure) and the `errno` of a failure.
    func writeQueuedBytes() -> (requested: Int, written: Int, code: Int32) {
        tls == nil ? writeVector(from: &writeQueue) : writeVector(from: &cipherQueue)
    }

    /// Plaintext and ciphertext not yet taken by the kernel.
    var queuedBytes: Int {
        writeQueue.count + cipherQueue.count
    }

    private func writeVector(from queue: inout WriteQueue) -> (requested: Int, written: Int, code: Int32) {
        let iovecs = eventLoop.iovecs
        let socket = fd
        let (requested, written, code) = queue.withIOVecs(iovecs) { count, bytes in
            let written = Sys.writeVector(socket, iovecs, count)
            return (bytes, written, written < 0 ? errno : 0)
        }
        statistics.writeCalls += 1
        if written >= 0 {
            statistics.bytesWritten += written
            queue.consume(written)
        }
        return (requested, written, code)
    }

    func scheduleFlush() {
        if !inFlushList {
            inFlushList = true
            eventLoop.flushList.append(self)
        }
    }

    /// Writes as much of the queue as the kernel takes now; the rest goes out when the socket is writable
    /// again. Loop thread only. (Without it, the loop flushes at the end of the current iteration.)
    public func flush() {
        assert(eventLoop.inEventLoop, "Connection.flush must be called on the connection's loop")
        flushNow()
    }

    /// True while fewer bytes than the high watermark are queued (with hysteresis: after reaching it, true
    /// again only at the low watermark); false once closed. Loop thread only. Whoever reads `false` gets a
    /// ``ConnectionHandler/connectionWritabilityChanged(_:)`` when it turns true again.
    public var isWritable: Bool {
        assert(eventLoop.inEventLoop)
        if case .open = state {
            // A caller that saw `false` must hear when it turns true again, even if the queue drains
            // within the same iteration (before any change would otherwise have been reported).
            if !writable { reportedWritable = false }
            return writable
        }
        return false
    }

    /// Bytes queued and not yet taken by the kernel. Loop thread only.
    public var bufferedWriteBytes: Int {
        assert(eventLoop.inEventLoop)
        return queuedBytes
    }

    /// True once the connection is closed or a close was requested. Loop thread only.
    public var isClosed: Bool {
        assert(eventLoop.inEventLoop)
        if case .open = state {
            return false
        }
        return true
    }

    /// Writes `bytes` once the connection is writable, from any thread or task.
    ///
    /// Returns when the bytes are queued; the loop flushes them at the end of the iteration that queued them
    /// (many sends in one iteration share one system call). While the connection is not writable, sends wait
    /// in order. Throws the close error (or `connectionClosed`) if the connection is or becomes closed before
    /// the bytes are queued, `cancelled` if the calling task is cancelled while waiting, `shutdown` if the loop
    /// has stopped.
    public func send(_ bytes: [UInt8]) async throws(LongLinkError) {
        if eventLoop.inEventLoop {
            guard case .open = state else {
                throw closeReason ?? .closedConnection()
            }
            if writable && sendWaitersHead == sendWaiters.count {
                writeQueue.append(bytes)
                didEnqueue()
                return
            }
        }
        let promise = OneShot<Result<Void, LongLinkError>>()
        let result = await withTaskCancellationHandler {
            if eventLoop.inEventLoop {
                enqueueSend(bytes, promise)
            } else if !eventLoop.tryExecute({ [self] in enqueueSend(bytes, promise) }) {
                promise.resume(.failure(.loopShutDown()))
            }
            return await promise.value()
        } onCancel: {
            if promise.resume(.failure(.taskCancelled("send"))) {
                eventLoop.tryExecute { [self] in
                    removeSendWaiter(promise)
                }
            }
        }
        try result.get()
    }

    func enqueueSend(_ bytes: [UInt8], _ promise: OneShot<Result<Void, LongLinkError>>) {
        guard case .open = state else {
            promise.resume(.failure(closeReason ?? .closedConnection()))
            return
        }
        if writable && sendWaitersHead == sendWaiters.count {
            if promise.resume(.success(())) {
                writeQueue.append(bytes)
                didEnqueue()
            }
            return
        }
        guard !promise.isResolved else {
            return
        }
        sendWaiters.append(SendWaiter(bytes: bytes, promise: promise))
    }

    func removeSendWaiter(_ promise: OneShot<Result<Void, LongLinkError>>) {
        if let index = sendWaiters[sendWaitersHead...].firstIndex(where: { $0.promise === promise }) {
            sendWaiters.remove(at: index)
            if sendWaitersHead == sendWaiters.count {
                sendWaiters.removeAll(keepingCapacity: true)
                sendWaitersHead = 0
            }
        }
    }

    func resumeSendWaiters() {
        while writable && sendWaitersHead < sendWaiters.count {
            let waiter = sendWaiters[sendWaitersHead]
            sendWaiters[sendWaitersHead].bytes = []
            sendWaitersHead += 1
            // Resume first, then queue, both on this thread: a waiter cancelled meanwhile writes nothing.
            if waiter.promise.resume(.success(())) {
                writeQueue.append(waiter.bytes)
                didEnqueue()
            }
        }
        if sendWaitersHead == sendWaiters.count {
            sendWaiters.removeAll(keepingCapacity: true)
            sendWaitersHead = 0
        }
    }

    func failSendWaiters(_ error: LongLinkError) {
        let waiters = sendWaiters[sendWaitersHead...]
        sendWaiters = []
        sendWaitersHead = 0
        for waiter in waiters {
            waiter.promise.resume(.failure(error))
        }
    }

    /// The loop's end-of-iteration flush.
    func flushFromLoop() {
        inFlushList = false
        eagerWritesStalled = false
        flushNow()
    }

    func flushNow() {
        guard fd >= 0 else {
            return
        }
        if !awaitingWritable {
            while true {
                if tls != nil {
                    encryptQueued()
                    guard fd >= 0 else { return }
                }
                if tls == nil ? writeQueue.isEmpty : cipherQueue.isEmpty { break }
                let (requested, written, code) = writeQueuedBytes()
                if written >= 0 {
                    if written < requested {
                        // The kernel's buffer is full; another try now would only return EAGAIN.
                        awaitingWritable = true
                        break
                    }
                } else if code == EINTR {
                    continue
                } else if code == EAGAIN || code == EWOULDBLOCK {
                    awaitingWritable = true
                    break
                } else {
                    finish(reset: false, reason: .system(errno: code, function: "sendmsg"))
                    return
                }
            }
        }
        if queuedBytes == 0, case .closing(let reason) = state {
            linger(reason)
            return
        }
        updateInterest()
        updateWritability()
    }

    func updateWritability() {
        if !writable && queuedBytes <= options.writeBufferLowWatermark {
            writable = true
        }
        if writable && sendWaitersHead < sendWaiters.count {
            resumeSendWaiters()
        }
        guard writable != reportedWritable else {
            return
        }
        guard let handler else {
            reportedWritable = writable
            return
        }
        if callbackDepth > 0 {
            // Never re-entrantly: report from the loop's end-of-iteration flush instead.
            scheduleFlush()
            return
        }
        reportedWritable = writable
        callbackDepth += 1
        handler.connectionWritabilityChanged(self)
        callbackDepth -= 1
    }

    // MARK: - Equality

    /// Identity.
    public static func == (lhs: Connection, rhs: Connection) -> Bool {
        lhs === rhs
    }

    /// Hashes the identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
