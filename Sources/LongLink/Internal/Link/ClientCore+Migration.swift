internal import LongLinkTransport
internal import LongLinkWire

/// Live migration, make before break: a successor link logs in beside the current one, then takes
/// the new requests while the old one retires, answering what was written on it before it closes
/// with `GoAway`. ``LinkStateMachine`` decides (`+Migration`); this performs.
extension ClientCore {
    /// Takes a connection that got its `Welcome` as the successor: login requests may go out on
    /// it, nothing else until ``completeMigration(_:)``.
    func attachSuccessor(_ pending: PendingLink) throws(LongLinkError) -> UInt64 {
        let generation = machine.newGeneration()
        let replaced: UInt64?
        switch machine.attachSuccessor(generation) {
        case .refuse(let error):
            pending.close(error: error)
            throw error
        case .login(let replacing):
            replaced = replacing
        }
        guard let handOver = pending.assumeIsolated({ $0.handOver(to: self, generation: generation) }),
            handOver.closed == nil
        else {
            // Nothing was written on it: the machine forgets it, no request is settled.
            machine.linkAbandoned(generation, error: nil)
            throw LongLinkError(code: .connectionLost, message: "the new link dropped before login")
        }
        if let replaced { links[replaced]?.connection.close(.immediately) }
        let link = Link(
            generation: generation, connection: pending.connection, endpoint: pending.endpoint,
            session: shared.session.load(ordering: .relaxed))
        let welcome = handOver.welcome
        link.welcome = welcome
        // Compression is for its login requests; the client-wide flag follows when it takes over.
        let proposed = proposedHeartbeat
        link.adopt(welcome, proposedHeartbeat: proposed, offeredCompression: configuration.compression.isEnabled)
        adoptedHeartbeat(link, proposed: proposed)
        links[generation] = link
        machine.successorWelcomed(generation, maxInFlight: welcome.maxInFlight)
        if !handOver.held.isEmpty { linkReceived(generation, handOver.held) }
        return generation
    }

    /// The successor's server, as its login step sees it.
    func successorInfo(_ generation: UInt64) -> ServerInfo? {
        guard machine.links.role(of: generation) == .successor, let link = link(generation), let welcome = link.welcome
        else { return nil }
        return ServerInfo(welcome, heartbeat: link.heartbeat, maxFrameBytes: link.maxFrameBytes)
    }

    /// The successor logged in (`loggedIn`: with the session's login step, as in
    /// ``openGate(_:loggedIn:)``): it becomes the current link (`Sync`, the queue), and the old one
    /// retires. False when the successor is gone or the client is stopping.
    func completeMigration(_ generation: UInt64, loggedIn: Bool) -> Bool {
        guard let new = link(generation), case .takeOver(let retired) = machine.completeMigration(generation)
        else {
            return false
        }
        if let retired, let old = link(retired) {
            run(machine.stopLiveness(retired))
            // The supervisor waits on the current link from now on.
            endWait(old, .ended(.migrated))
        }
        // The old current link may have ended already (a server that said GoAway and closed).
        forgetEndedLink()
        shared.linkCompresses.store(new.compresses, ordering: .relaxed)
        machine.stats.migrations += 1
        scheduleTick(new)
        openGate(generation, loggedIn: loggedIn)
        for old in machine.links.retiring.keys.sorted() where machine.retireIfDrained(old) { run(.retire(old)) }
        return true
    }

    /// Closes every successor and retiring link (shutdown, terminal error).
    func closeSideLinks() {
        for generation in machine.links.sideLinks { links[generation]?.connection.close(.graceful) }
    }
}
