internal import LongLinkTransport
internal import LongLinkWire

/// Live migration, make before break: a successor link logs in beside the current one, then takes
/// the new requests while the old one retires, answering what was written on it before it closes
/// with `GoAway`. The successor and retiring links live beside ``LinkStateMachine``, which knows
/// only the current link.
extension ClientCore {
    /// The successor logging in, or a link retiring, if `generation` is one and has not ended.
    func sideLink(_ generation: UInt64) -> Link? {
        if let successor, successor.generation == generation, successor.end == nil { return successor }
        if let old = retiring[generation], old.end == nil { return old }
        return nil
    }

    /// Takes a connection that got its `Welcome` as the successor: login requests may go out on
    /// it, nothing else until ``completeMigration(_:)``.
    func attachSuccessor(_ pending: PendingLink) throws(LongLinkError) -> UInt64 {
        if let error = machine.admissionError {
            pending.close(error: error)
            throw error
        }
        nextGeneration += 1
        let generation = nextGeneration
        let link = Link(generation: generation, connection: pending.connection, endpoint: pending.endpoint)
        guard let handOver = pending.assumeIsolated({ $0.handOver(to: self, generation: generation) }),
            handOver.closed == nil
        else {
            throw LongLinkError(code: .connectionLost, message: "the new link dropped before login")
        }
        let welcome = handOver.welcome
        link.welcome = welcome
        // Compression is for its login requests; the client-wide flag follows when it takes over.
        link.adopt(
            welcome, proposedHeartbeat: configuration.heartbeat, offeredCompression: configuration.compression.isEnabled)
        successor?.connection.close(.immediately)
        successor = link
        ledger.linkAttached(generation)
        if !handOver.held.isEmpty { sideLinkReceived(link, handOver.held) }
        return generation
    }

    /// The successor's server, as its login step sees it.
    func successorInfo(_ generation: UInt64) -> ServerInfo? {
        guard let link = sideLink(generation), link === successor, let welcome = link.welcome else { return nil }
        return ServerInfo(welcome, heartbeat: link.heartbeat, maxFrameBytes: link.maxFrameBytes)
    }

    /// The successor logged in: it becomes the current link (`Sync`, the queue), and the old one
    /// retires. False when the successor is gone or the client is stopping.
    func completeMigration(_ generation: UInt64) -> Bool {
        guard let new = successor, new.generation == generation, new.end == nil, let welcome = new.welcome else {
            return false
        }
        successor = nil
        guard case .sendHello = machine.attach(generation),
            machine.receivedWelcome(generation, version: welcome.version) == .completeHandshake
        else {
            new.connection.close(.graceful)
            return false
        }
        if let old = link, old.end == nil {
            retiring[old.generation] = old
            old.tick?.cancel()
            old.probe?.cancel()
            // The supervisor waits on the current link from now on.
            old.resumeEndWaiter(.ended(.migrated))
        }
        link = new
        linkCompresses.store(new.compresses, ordering: .relaxed)
        stats.migrations += 1
        scheduleTick(new)
        openGate(generation)
        for old in Array(retiring.values) { retireIfDrained(old.generation) }
        return true
    }

    /// Closes a retiring link with `GoAway` once nothing written on it waits for a reply.
    func retireIfDrained(_ generation: UInt64) {
        guard let old = retiring[generation], old.end == nil, !old.goingAway, !book.hasWritten(on: generation) else {
            return
        }
        old.goingAway = true
        ledger.linkGoingAway(generation)
        send(.goAway(Frame.GoAway(code: .ok, reason: "moved to another link")), on: old)
        old.connection.close(.graceful)
    }

    /// Closes a successor or retiring link.
    func closeSideLink(_ generation: UInt64, error: LongLinkError?) {
        guard let link = sideLink(generation) else { return }
        link.connection.close(error == nil ? .graceful : .immediately, error: error)
    }

    /// Frames on a successor (before it takes over) or a retiring link: replies, pushes and pings.
    func sideLinkReceived(_ link: Link, _ frames: [Frame]) {
        for frame in frames {
            guard link.end == nil else { return }
            switch frame {
            case .response(let response): handleResponse(response, on: link)
            case .push(let push): handlePush(push, on: link)
            case .ping(let ping): send(.pong(Frame.Pong(nonce: ping.nonce)), on: link)
            case .pong, .unrecognized: break
            case .goAway:
                // The server leaves: what was written there is answered or resent by the close.
                if !book.hasWritten(on: link.generation) { link.connection.close(.graceful) }
            case .hello, .welcome, .request, .cancel, .ack, .sync:
                log(.warning, "protocol violation by the server: a client frame on a side link")
                link.connection.close(
                    .immediately,
                    error: LongLinkError(code: .protocolViolation, message: "the server sent a client frame"))
                return
            }
        }
    }

    /// A successor or retiring link closed: its written requests are resent on the current link
    /// when that is safe, the others failed, as for any link that drops.
    func sideLinkClosed(_ generation: UInt64, _ error: LongLinkError?) {
        let link: Link
        if let successor, successor.generation == generation {
            link = successor
            self.successor = nil
        } else if let old = retiring.removeValue(forKey: generation) {
            link = old
        } else {
            return
        }
        link.tick?.cancel()
        if link.end == nil { link.end = .closed(error) }
        ledger.linkClosed(generation)
        let resent = settleWrittenRequests(of: link, resendAllowed: !machine.isStopping)
        if resent > 0, let current = self.link, machine.phase == .open(current.generation) {
            drainQueue(on: current)
        }
        if machine.shuttingDown { finishShutdownIfIdle() }
    }

    /// Closes every side link (shutdown, terminal error).
    func closeSideLinks() {
        successor?.connection.close(.graceful)
        for old in retiring.values where old.end == nil { old.connection.close(.graceful) }
    }
}
