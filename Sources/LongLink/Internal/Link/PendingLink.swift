internal import LongLinkTransport
internal import LongLinkWire

/// One connection from connect to `Welcome`, before it is the client's link: what the connect race
/// and the prober hold. A probe also pings it; the race's winner is handed over to the core
/// (``ClientCore/attach(_:)``), the others are closed.
///
/// Runs on the event loop of its connection (its executor is the loop), like the core, so that the
/// connection's callbacks reach it without a hop and the hand-over loses no frame.
actor PendingLink {
    nonisolated let loop: EventLoop
    nonisolated let connection: Connection
    nonisolated let endpoint: Endpoint
    nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    private let clock: LoopClock
    private let logger: (@Sendable (LogRecord) -> Void)?
    private var handler: LinkHandler?
    private(set) var welcome: Frame.Welcome?
    private var welcomeWaiter: CheckedContinuation<Frame.Welcome, any Error>?
    private var pongWaiter:
        (nonce: UInt64, sentAt: ContinuousClock.Instant, continuation: CheckedContinuation<Pong, any Error>)?
    private var timer: (any ScheduledWork)?
    /// `Pong`s that answered no `Ping` of ours: ignored (see ``ping(timeout:)``).
    private(set) var unmatchedPongs = 0
    /// Frames that came after `Welcome` and before the hand-over (a `GoAway`, say), for the core.
    private var held: [Frame] = []
    private var closedError: LongLinkError?
    private var handedOver = false

    /// A `Pong`: its round trip (on the system clock) and the load it reported.
    struct Pong: Sendable {
        var roundTrip: Duration
        var loadPermille: Int
    }

    /// At most this many frames wait for the hand-over; a server sending more before login is broken.
    static let heldLimit = 1_024

    private init(
        connection: Connection, endpoint: Endpoint, clock: LoopClock, logger: (@Sendable (LogRecord) -> Void)?
    ) {
        self.loop = connection.eventLoop
        self.connection = connection
        self.endpoint = endpoint
        self.clock = clock
        self.logger = logger
    }

    /// Connects (within `timeout`, the TLS handshake included when `tls` is given), sends `hello` and waits for `Welcome` (within
    /// `handshakeTimeout`, `timeout` again when nil). Cancelling the calling task closes the
    /// connection and throws `cancelled`.
    static func open(
        _ endpoint: Endpoint, hello: Frame.Hello, options: ConnectionOptions, timeout: Duration,
        handshakeTimeout: Duration? = nil, maxFrameBytes: Int, tls: TLSContext?, clock: LoopClock,
        on loop: EventLoop, logger: (@Sendable (LogRecord) -> Void)? = nil
    ) async throws(LongLinkError) -> PendingLink {
        var options = options
        options.connectTimeout = timeout
        let connection = try await Connection.connect(to: endpoint, options: options, tls: tls, on: loop)
        let timeout = handshakeTimeout ?? timeout
        let pending = PendingLink(connection: connection, endpoint: endpoint, clock: clock, logger: logger)
        do {
            _ = try await withTaskCancellationHandler {
                try await pending.handshake(hello, timeout: timeout, maxFrameBytes: maxFrameBytes)
            } onCancel: {
                pending.close(error: LongLinkError(code: .cancelled, message: "the connect race was decided"))
            }
        } catch {
            pending.close(error: nil)
            throw Supervisor.wrap(error)
        }
        return pending
    }

    private func handshake(_ hello: Frame.Hello, timeout: Duration, maxFrameBytes: Int) async throws -> Frame.Welcome {
        let handler = LinkHandler(pending: self, maxFrameBytes: maxFrameBytes)
        self.handler = handler
        connection.start(handler: handler)
        connection.write(encoding: { Frame.hello(hello).encodeDelimited(into: &$0) })
        return try await withCheckedThrowingContinuation { continuation in
            if let closedError {
                continuation.resume(throwing: closedError)
                return
            }
            welcomeWaiter = continuation
            timer = clock.schedule(at: clock.now.advanced(by: timeout), on: loop) { [self] in
                assumeIsolated {
                    $0.fail(LongLinkError(code: .connectTimeout, message: "no Welcome within the connect timeout"))
                }
            }
        }
    }

    /// Sends a `Ping` and waits for its `Pong`, at most `timeout`.
    ///
    /// The nonce is random: with nonces a server can predict (1, 2, 3) it could send each `Pong`
    /// before its `Ping` arrives and look 0 ms away, and win every choice of endpoint.
    func ping(timeout: Duration) async throws -> Pong {
        try await withCheckedThrowingContinuation { continuation in
            if let closedError {
                continuation.resume(throwing: closedError)
                return
            }
            let nonce = ClientCore.randomNonce()
            pongWaiter = (nonce, ContinuousClock.now, continuation)
            connection.write(encoding: { Frame.ping(Frame.Ping(nonce: nonce)).encodeDelimited(into: &$0) })
            timer = clock.schedule(at: clock.now.advanced(by: timeout), on: loop) { [self] in
                assumeIsolated {
                    $0.fail(LongLinkError(code: .deadlineExceeded, message: "no Pong within the probe timeout"))
                }
            }
        }
    }

    /// Says `GoAway` (when welcomed) and closes; does nothing after the hand-over.
    nonisolated func close(error: LongLinkError?) {
        loop.execute { [self] in
            assumeIsolated { pending in
                guard !pending.handedOver else { return }
                if pending.welcome != nil, pending.closedError == nil {
                    pending.connection.write(encoding: {
                        Frame.goAway(Frame.GoAway(code: .ok, reason: "not needed")).encodeDelimited(into: &$0)
                    })
                }
                pending.connection.close(error == nil ? .graceful : .immediately, error: error)
            }
        }
    }

    /// What the core takes over: the frames held since `Welcome`, and the error the connection
    /// closed with if it closed meanwhile (the core then ends the link as if it had seen the close).
    struct HandOver {
        var welcome: Frame.Welcome
        var held: [Frame]
        var closed: LongLinkError?
    }

    /// The core takes the connection: from now on its frames go to the core's link of `generation`.
    /// Nil when there was no `Welcome`, or the connection was handed over already.
    func handOver(to core: ClientCore, generation: UInt64) -> HandOver? {
        guard let welcome, let handler, !handedOver else { return nil }
        handedOver = true
        timer?.cancel()
        handler.attach(core: core, generation: generation)
        defer { held = [] }
        return HandOver(welcome: welcome, held: held, closed: closedError)
    }

    // MARK: From the connection

    func received(_ frames: [Frame], failure: WireFormatError?) {
        for frame in frames where closedError == nil {
            guard welcome != nil else {
                first(frame)
                continue
            }
            switch frame {
            case .pong(let pong):
                guard let waiter = pongWaiter, waiter.nonce == pong.nonce else {
                    unmatchedPongs += 1
                    continue
                }
                pongWaiter = nil
                timer?.cancel()
                waiter.continuation.resume(
                    returning: Pong(
                        roundTrip: ContinuousClock.now - waiter.sentAt, loadPermille: Int(pong.loadPermille)))
            case .ping(let ping):
                connection.write(encoding: { Frame.pong(Frame.Pong(nonce: ping.nonce)).encodeDelimited(into: &$0) })
            case .unrecognized:
                continue
            default:
                guard held.count < Self.heldLimit else {
                    violate("the server sent more than \(Self.heldLimit) frames before login")
                    return
                }
                held.append(frame)
            }
        }
        if let failure {
            if case .frameTooLarge = failure.kind {
                violate("frame too large: \(failure)", code: .frameTooLarge)
            } else {
                violate("malformed frame: \(failure)")
            }
        }
    }

    private func first(_ frame: Frame) {
        switch frame {
        case .welcome(let welcome):
            guard welcome.version == Frame.protocolVersion else {
                violate("the server speaks protocol version \(welcome.version)")
                return
            }
            self.welcome = welcome
            timer?.cancel()
            welcomeWaiter?.resume(returning: welcome)
            welcomeWaiter = nil
        case .goAway(let goAway):
            fail(LinkEnd.goAway(goAway).error)
        case .unrecognized:
            break
        default:
            violate("the first frame from the server was not Welcome")
        }
    }

    func closed(_ error: LongLinkError?) {
        fail(error ?? LongLinkError(code: .connectionClosed, message: "the server closed the connection"))
    }

    private func violate(_ reason: String, code: LongLinkError.Code = .protocolViolation) {
        // The same words as the core's, so that tools can tell bad input from a failed connect.
        logger?(LogRecord(bounded: .warning, "protocol violation by the server: \(reason)"))
        fail(LongLinkError(code: code, message: reason))
    }

    /// Ends the waits with `error` and closes the connection.
    private func fail(_ error: LongLinkError) {
        guard closedError == nil else { return }
        closedError = error
        timer?.cancel()
        connection.close(.immediately, error: error)
        welcomeWaiter?.resume(throwing: error)
        welcomeWaiter = nil
        pongWaiter?.continuation.resume(throwing: error)
        pongWaiter = nil
    }
}
