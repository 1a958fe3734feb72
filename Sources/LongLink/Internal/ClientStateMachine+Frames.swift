internal import LongLinkTransport
internal import LongLinkWire

/// Each frame a link reads, decided here: the handshake's first frame, replies, pushes with their
/// offers to the consumers, `Ping`/`Pong` with the round trip and the server's load, `GoAway`, and
/// what breaks the protocol. The core hands in one frame at a time, performs the actions, and stops
/// the read when told.
extension ClientStateMachine where Consumer: PushConsumer {
    /// What one frame did.
    struct FrameHandled {
        /// What the core performs, in order.
        var actions: [Action] = []
        /// False when the link is done with (refused, closing): the rest of the read is ignored.
        var keepReading = true
    }

    /// A frame read on the link of `generation`, which the core checked is the client's and has not
    /// ended, at `now` (the read's time); `inflate` for a compressed payload.
    mutating func received(
        _ frame: Frame, on generation: UInt64, now: ContinuousClock.Instant, inflate: PayloadInflation
    ) -> FrameHandled {
        var handled = FrameHandled()
        if links.awaitsWelcome(generation) {
            handled.keepReading = receivedFirst(frame, on: generation, into: &handled.actions)
            return handled
        }
        switch frame {
        case .response(let response): handled.actions = receivedResponse(response, inflate: inflate)
        case .push(let push): handled.actions = receivedPush(push, on: generation, inflate: inflate)
        case .ping(let ping): handled.actions = [.send(.pong(Frame.Pong(nonce: ping.nonce)), on: generation)]
        case .pong(let pong): handled.actions = receivedPong(pong, on: generation, now: now)
        case .goAway(let goAway): handled.actions = receivedGoAwayFrame(goAway, on: generation)
        case .unrecognized: break
        case .hello, .welcome, .request, .cancel, .ack, .sync:
            handled.actions = violation(on: generation, "the server sent a frame only a client sends")
            handled.keepReading = false
        }
        return handled
    }

    /// The transport could not decode what the link of `generation` read.
    mutating func malformed(_ generation: UInt64, _ failure: WireFormatError) -> [Action] {
        if case .frameTooLarge = failure.kind {
            return violation(on: generation, "frame too large: \(failure)", code: .frameTooLarge)
        }
        return violation(on: generation, "malformed frame: \(failure)")
    }

    /// Whether the client leaves a server reporting this load (only with somewhere else to go).
    func leavesAt(_ permille: Int) -> Bool {
        supervision.hasAlternatives && permille >= leaveAtLoadPermille
    }

    /// The heartbeat sent a `Ping` of `nonce` on `generation` at `now`: its `Pong` measures the round trip.
    mutating func pingSent(on generation: UInt64, nonce: UInt64, at now: ContinuousClock.Instant) {
        pings[generation] = (nonce, now)
    }

    // MARK: The handshake

    /// `Hello` was sent; the first frame must be `Welcome` or `GoAway`. False when the link is done.
    private mutating func receivedFirst(_ frame: Frame, on generation: UInt64, into actions: inout [Action]) -> Bool {
        switch frame {
        case .welcome(let welcome):
            switch receivedWelcome(generation, version: welcome.version, maxInFlight: welcome.maxInFlight) {
            case .violation(let reason):
                actions = violation(on: generation, reason)
                return false
            case .none:
                return false
            case .completeHandshake:
                actions = [.welcomed(generation, welcome)]
                return true
            }
        case .goAway(let goAway):
            actions = receivedGoAwayFrame(goAway, on: generation)
            return false
        case .unrecognized:
            return true
        default:
            actions = violation(on: generation, "the first frame from the server was not Welcome")
            return false
        }
    }

    /// The server broke the protocol: the client says `GoAway` and closes, once.
    private mutating func violation(
        on generation: UInt64, _ reason: String, code: LongLinkError.Code = .protocolViolation
    ) -> [Action] {
        var actions: [Action] = [.log(.warning, "protocol violation by the server: \(reason)")]
        let status: StatusCode = code == .frameTooLarge ? .resourceExhausted : .invalidArgument
        guard links.closeRequested(generation) else { return actions }
        actions.append(.send(.goAway(Frame.GoAway(code: status, reason: reason, reconnect: true)), on: generation))
        actions.append(.close(generation, .graceful, error: LongLinkError(code: code, message: reason)))
        return actions
    }

    private mutating func receivedGoAwayFrame(_ goAway: Frame.GoAway, on generation: UInt64) -> [Action] {
        var actions: [Action] = [
            .log(.info, "server sent GoAway (\(goAway.code), reconnect: \(goAway.reconnect)): \(goAway.reason)")
        ]
        // With somewhere else to go, the supervisor moves now (told before any close below, so that
        // it moves rather than reconnects), while this link drains.
        let received = receivedGoAway(generation, goAway)
        if received.tellSupervisor { actions.append(.tellGoingAway(generation, goAway)) }
        switch received.link {
        case .failHandshakeAndClose(let error): actions.append(.close(generation, .graceful, error: error))
        case .close: actions.append(.close(generation, .graceful, error: nil))
        // Requests written before stay: the server answers them before it closes.
        case .waitForReplies, .none: break
        }
        return actions
    }

    // MARK: Replies, heartbeats

    private mutating func receivedResponse(_ response: Frame.Response, inflate: PayloadInflation) -> [Action] {
        guard let id = Frame.requestNumber(fromID: response.requestID), let entry = book[id], case .written = entry.stage
        else {
            stats.unknownReplies += 1
            return []
        }
        stats.repliesReceived += 1
        if let status = response.status, status.code != .ok {
            // The server gave up on the budget sent in timeout_ms: a timeout like the client's own.
            if status.code == .deadlineExceeded { stats.timeouts += 1 }
            return finish(id, .failure(LongLinkError(status: status))) ?? []
        }
        guard response.compression != 0 else {
            // The common case, without the inflation's result and a second array.
            return finish(id, .success(response.payload)) ?? []
        }
        var actions: [Action] = []
        let result = inflated(response.payload, response.compression, inflate, logInto: &actions)
        return actions + (finish(id, result.mapError { $0 }) ?? [])
    }

    private mutating func receivedPong(_ pong: Frame.Pong, on generation: UInt64, now: ContinuousClock.Instant)
        -> [Action]
    {
        guard links.role(of: generation) == .current else { return [] }
        if let ping = pings[generation], ping.nonce == pong.nonce {
            stats.lastRoundTrip = now - ping.sentAt
            pings[generation] = nil
        }
        var actions: [Action] = []
        // A current link at the leaving load wakes the supervisor.
        let permille = Int(pong.loadPermille)
        if links.latest == generation, leavesAt(permille) {
            actions.append(.wakeSupervisor(generation, .overloaded(permille)))
        }
        // It may end the wait for a redelivery.
        return actions + ledger.pongReceived(pong.nonce).map(Action.pushes)
    }

    /// `payload` as the app reads it; a failure is counted and logged.
    private mutating func inflated(
        _ payload: [UInt8], _ compression: UInt32, _ inflate: PayloadInflation, logInto actions: inout [Action]
    ) -> Result<[UInt8], LongLinkError> {
        let result = inflate(payload, compression: compression)
        if case .failure(let error) = result {
            stats.compressionFailures += 1
            actions.append(.log(.error, "a compressed payload did not inflate: \(error.message)"))
        }
        return result
    }

    // MARK: Pushes

    private mutating func receivedPush(_ frame: Frame.Push, on generation: UInt64, inflate: PayloadInflation) -> [Action] {
        stats.pushesReceived += 1
        var actions: [Action] = []
        var push = Push(seq: frame.seq, topic: frame.topic, payload: frame.payload, epoch: frame.epoch)
        if frame.compression != 0 {
            switch inflated(frame.payload, frame.compression, inflate, logInto: &actions) {
            case .success(let payload): push.payload = payload
            case .failure(let error):
                push.payload = []
                push.payloadError = error
            }
        }
        // A best-effort push has no seq to track: it goes to the consumers, if any, and is gone.
        let consumers = ledger.consumers.matches(for: push)
        if !push.isReliable {
            offer(push, to: consumers, logInto: &actions)
            return actions
        }
        let received = ledger.received(push, on: generation, wanted: !consumers.isEmpty)
        actions += received.actions.map(Action.pushes)
        switch received.delivery {
        case .offer:
            offer(push, to: consumers, logInto: &actions)
        case .held:
            break
        case .ackAgain, .dropDuplicate:
            // A redelivery: the app has it (the earlier Ack was lost and it is acknowledged again),
            // or a consumer holds it.
            stats.duplicatePushesDropped += 1
        case .dropDeferred:
            stats.reliablePushesDeferred += 1
        case .dropUnwanted:
            stats.bestEffortPushesDropped += 1
        }
        return actions
    }

    /// Offers `push` to every consumer that wants its topic, and tells the ledger how that went.
    private mutating func offer(
        _ push: Push, to consumers: TopicIndex<Consumer>.Matches, logInto actions: inout [Action]
    ) {
        var accepted = 0
        var refused = false
        var conflated = 0
        var toWake: [Consumer] = []
        consumers.forEach { consumer in
            let (offered, wake) = consumer.offer(push, wakeLater: true)
            if wake { toWake.append(consumer) }
            switch offered {
            case .accepted: accepted += 1
            case .conflated:
                accepted += 1
                conflated += 1
            case .refused: if !consumer.isFinished { refused = true }
            }
        }
        consumersToWake += toWake
        stats.bestEffortPushesConflated += conflated
        if !push.isReliable {
            if accepted == 0 { stats.bestEffortPushesDropped += 1 }
        } else if accepted == 0 {
            stats.reliablePushesDeferred += 1
        }
        if ledger.offered(push, accepted: accepted, refused: refused) {
            actions.append(.log(.warning, "push consumer behind: deferring reliable pushes until it catches up"))
        }
    }
}
