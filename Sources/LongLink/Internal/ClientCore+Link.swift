internal import LongLinkTransport
internal import LongLinkWire

extension ClientCore {
    /// Takes a new connection, sends Hello and waits for Welcome (bounded by the connect timeout).
    func attach(_ connection: Connection, endpoint: Endpoint) async throws -> UInt64 {
        nextGeneration += 1
        let generation = nextGeneration
        if case .refuse(let error) = machine.attach(generation) {
            // A shutdown (or terminal error) landed while the supervisor was connecting: this link
            // must not come up, or nothing would ever close it.
            connection.close(.immediately, error: error)
            throw error
        }
        let link = Link(generation: generation, connection: connection, endpoint: endpoint)
        self.link = link
        connection.start(
            handler: LinkHandler(core: self, generation: generation, maxFrameBytes: configuration.maxFrameBytes))
        let proposed = configuration.heartbeat
        send(
            .hello(
                Frame.Hello(
                    clientID: configuration.clientID, heartbeatMilliseconds: proposed.wireMilliseconds,
                    metadata: helloMetadata)),
            on: link)
        let welcome = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Frame.Welcome, any Error>) in
            if let end = link.end {
                continuation.resume(throwing: end.error)
                return
            }
            link.welcomeWaiter = continuation
            link.handshakeTimer = clock.schedule(at: clock.now.advanced(by: configuration.connectTimeout), on: loop) {
                [self] in
                assumeIsolated { core in
                    core.failHandshake(
                        generation,
                        LongLinkError(code: .connectTimeout, message: "no Welcome within the connect timeout"))
                }
            }
        }
        stats.connects += 1
        if stats.connects > 1 { stats.reconnects += 1 }
        link.heartbeat = ServerBounds.heartbeat(offered: welcome.heartbeatMilliseconds, proposed: proposed)
        link.maxFrameBytes = ServerBounds.maxFrameBytes(offered: welcome.maxFrameBytes)
        link.maxInFlight = welcome.maxInFlight == 0 ? .max : Int(welcome.maxInFlight)
        adoptCompression(welcome, on: link)
        scheduleTick(link)
        return generation
    }

    private func failHandshake(_ generation: UInt64, _ error: LongLinkError) {
        guard let link = link(generation), link.welcomeWaiter != nil else { return }
        close(link, .immediately, error: error)
        link.resumeWelcomeWaiter(with: .failure(error))
    }

    var welcome: Frame.Welcome? { link?.welcome }

    /// The current link's server, as the login step sees it.
    var serverInfo: ServerInfo? {
        guard let link, let welcome = link.welcome else { return nil }
        return ServerInfo(welcome, heartbeat: link.heartbeat, maxFrameBytes: link.maxFrameBytes)
    }

    /// Login is done: send `Sync`, the acknowledgements that waited, and the queue.
    func openGate(_ generation: UInt64) {
        guard let link = link(generation), case .sync(let openQueue) = machine.loginSucceeded(generation) else {
            return
        }
        send(.sync(Frame.Sync()), on: link)
        pushes.syncSent()
        let waitingAcks = acks.take()
        if !waitingAcks.isEmpty { sendAck(waitingAcks) }
        if openQueue { drainQueue(on: link) }
    }

    /// Suspends until the link ends.
    func waitForEnd(_ generation: UInt64) async -> LinkEnd {
        await withCheckedContinuation { continuation in
            guard let link, link.generation == generation else {
                continuation.resume(returning: .closed(nil))
                return
            }
            if let end = link.end {
                continuation.resume(returning: end)
            } else {
                link.endWaiter = continuation
            }
        }
    }

    /// Closes the current link (from the supervisor, after a failed login for example).
    func closeLink(_ generation: UInt64, error: LongLinkError) {
        guard let link = link(generation) else { return }
        close(link, .immediately, error: error)
    }

    /// Closes `link` unless it is closing already; the transport then reports ``linkClosed(_:_:)``.
    func close(_ link: Link, _ mode: CloseMode, error: LongLinkError? = nil) {
        guard machine.closeRequested(link.generation) else { return }
        link.connection.close(mode, error: error)
    }

    /// The server read enough of what was written: acks and requests held back go out.
    func linkWritabilityChanged(_ generation: UInt64) {
        guard let link = link(generation), link.connection.isWritable else { return }
        if let epoch = link.pushEpoch { releaseAcksAwaitingEpoch(epoch) }
        guard book.queuedCount > 0, machine.phase == .open(generation) else { return }
        drainQueue(on: link)
    }

    /// Handles the frames of one read, in order.
    func linkReceived(_ generation: UInt64, _ frames: [Frame]) {
        guard let link = link(generation) else { return }
        link.receivedSinceTick = true
        link.receivedSinceProbe = true
        for frame in frames {
            guard link.end == nil, machine.generation == generation else { return }
            if link.welcome == nil {
                guard handleFirstFrame(frame, on: link) else { return }
                continue
            }
            switch frame {
            case .response(let response): handleResponse(response, on: link)
            case .push(let push): handlePush(push, on: link)
            case .ping(let ping): send(.pong(Frame.Pong(nonce: ping.nonce)), on: link)
            case .pong(let pong):
                if let ping = link.ping, ping.nonce == pong.nonce {
                    stats.lastRoundTrip = clock.now - ping.sentAt
                    link.ping = nil
                }
            case .goAway(let goAway): handleGoAway(goAway, on: link)
            case .unrecognized: break
            case .hello, .welcome, .request, .cancel, .ack, .sync:
                violate(link, "the server sent a frame only a client sends")
                return
            }
        }
    }

    /// Hello was sent; the first frame must be Welcome or GoAway. False when the link is done.
    private func handleFirstFrame(_ frame: Frame, on link: Link) -> Bool {
        switch frame {
        case .welcome(let welcome):
            switch machine.receivedWelcome(link.generation, version: welcome.version) {
            case .violation(let reason):
                violate(link, reason)
                return false
            case .none:
                return false
            case .completeHandshake:
                link.welcome = welcome
                link.handshakeTimer?.cancel()
                link.resumeWelcomeWaiter(with: .success(welcome))
                return true
            }
        case .goAway(let goAway):
            handleGoAway(goAway, on: link)
            return false
        case .unrecognized:
            return true
        default:
            violate(link, "the first frame from the server was not Welcome")
            return false
        }
    }

    func linkViolated(_ generation: UInt64, _ failure: WireFormatError) {
        guard let link = link(generation) else { return }
        if case .frameTooLarge = failure.kind {
            violate(link, "frame too large: \(failure)", code: .frameTooLarge)
        } else {
            violate(link, "malformed frame: \(failure)")
        }
    }

    private func violate(_ link: Link, _ reason: String, code: LongLinkError.Code = .protocolViolation) {
        log(.warning, "protocol violation by the server: \(reason)")
        let status: StatusCode = code == .frameTooLarge ? .resourceExhausted : .invalidArgument
        guard machine.closeRequested(link.generation) else { return }
        send(.goAway(Frame.GoAway(code: status, reason: reason, reconnect: true)), on: link)
        link.connection.close(.graceful, error: LongLinkError(code: code, message: reason))
    }

    private func handleGoAway(_ goAway: Frame.GoAway, on link: Link) {
        log(.info, "server sent GoAway (\(goAway.code), reconnect: \(goAway.reconnect)): \(goAway.reason)")
        let hasWritten = book.hasWritten(on: link.generation)
        switch machine.receivedGoAway(link.generation, goAway, hasWrittenRequests: hasWritten) {
        case .failHandshakeAndClose(let error):
            link.resumeWelcomeWaiter(with: .failure(error))
            link.connection.close(.graceful)
        case .close:
            link.connection.close(.graceful)
        case .waitForReplies, .none:
            // Requests written before stay: the server answers them before it closes.
            break
        }
    }

    func linkClosed(_ generation: UInt64, _ error: LongLinkError?) {
        guard let link = link(generation), let closed = machine.closed(generation, error: error) else { return }
        link.tick?.cancel()
        link.probe?.cancel()
        link.handshakeTimer?.cancel()
        link.end = closed.end
        link.resumeWelcomeWaiter(with: .failure(closed.end.error))
        // Written requests go out again after reconnect when that is safe; the others are failed
        // with connectionLost: their outcome is unknown.
        let settlement = book.linkEnded(
            generation, resendAllowed: closed.resendAllowed,
            serverDeduplicates: (link.welcome?.dedupeWindowMilliseconds ?? 0) > 0)
        stats.resends += settlement.resent
        fail(
            settlement.failed,
            with: LongLinkError(
                code: .connectionLost, message: "the link dropped after the request was written; its outcome is unknown"
            ))
        if let waiter = link.endWaiter {
            link.endWaiter = nil
            waiter.resume(returning: closed.end)
        }
        if machine.shuttingDown { finishShutdownIfIdle() }
    }
}
