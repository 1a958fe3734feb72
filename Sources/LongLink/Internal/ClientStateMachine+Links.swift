internal import LongLinkWire

/// A link's life as the requests and pushes see it: attached, welcomed, logged in (the gate opens),
/// closed; and the shutdown. Every close path hands back each request it ends, so that the core
/// fails each one once, and says which go out again.
extension ClientStateMachine {
    /// A new connection of `generation` is up, its `Hello` sent, as the current link.
    mutating func attach(_ generation: UInt64) -> LinkStateMachine.AttachAction {
        let action = links.attach(generation)
        if case .awaitWelcome = action {
            ledger.linkAttached(generation)
            activity[generation] = LinkActivity()
        }
        return action
    }

    /// The connection of a migration's successor (``LinkStateMachine/attachSuccessor(_:)``) was
    /// handed over with its `Welcome`, which allows `maxInFlight` requests at once: its login may
    /// start beside the current link.
    mutating func successorWelcomed(_ generation: UInt64, maxInFlight: UInt32) {
        ledger.linkAttached(generation)
        activity[generation] = LinkActivity()
        welcomed(generation, maxInFlight: maxInFlight)
    }

    /// The first frame of `generation` is a `Welcome` of protocol `version`, allowing at most
    /// `maxInFlight` requests written and unanswered at once (0: no limit).
    mutating func receivedWelcome(_ generation: UInt64, version: UInt32, maxInFlight: UInt32)
        -> LinkStateMachine.WelcomeAction
    {
        let action = links.receivedWelcome(generation, version: version)
        if action == .completeHandshake { welcomed(generation, maxInFlight: maxInFlight) }
        return action
    }

    /// The link of `generation` got its `Welcome`, which allows at most `maxInFlight` requests
    /// written and unanswered at once there (0: no limit).
    private mutating func welcomed(_ generation: UInt64, maxInFlight: UInt32) {
        inFlightLimits[generation] = maxInFlight == 0 ? nil : Int(maxInFlight)
    }

    /// What opening the gate does: `Sync` goes out, then `acks` (those that waited for a login),
    /// then the queue when `drain` (not while shutting down).
    struct GateOpened {
        var acks: [PushLedger<Consumer>.Action]
        var drain: Bool
    }

    /// The login step and the subscriptions succeeded on `generation` (`loggedIn`: the session has
    /// a login step, and it ran here); nil when the link is not logging in any more.
    mutating func loginSucceeded(_ generation: UInt64, loggedIn: Bool) -> GateOpened? {
        guard case .sync(let openQueue) = links.loginSucceeded(generation, loggedIn: loggedIn) else { return nil }
        return GateOpened(acks: ledger.loginSynced(generation), drain: openQueue)
    }

    /// The login step and the subscriptions succeeded on `generation`: the gate opens with `Sync`,
    /// the acks that waited for a login, the queue (``loginSucceeded(_:loggedIn:)``), then the
    /// subscriptions made meanwhile. Nil when the link is not logging in any more.
    mutating func openGate(_ generation: UInt64, loggedIn: Bool) -> [Action]? {
        guard let opened = loginSucceeded(generation, loggedIn: loggedIn) else { return nil }
        var actions: [Action] = [.send(.sync(Frame.Sync()), on: generation)]
        actions += opened.acks.map(Action.pushes)
        if opened.drain { actions.append(.drainQueue(generation)) }
        return actions + [.nudgeSubscriptions]
    }

    /// What the end of a link does.
    struct LinkClosed {
        /// What the link was and how it ended; nil when it was not the client's any more.
        var closed: LinkStateMachine.ClosedAction?
        /// The requests written on it: those handed back fail (their outcome is unknown); the
        /// others wait first in the queue to go out again.
        var settlement: RequestBook<Caller>.Settlement
        /// Its server de-duplicates (it announced a window), but the link was used before any
        /// login, so nothing written there was spared: the failure says why.
        var madeBeforeLogin: Bool
        /// A side link's requests were queued again and the current link is open: write them now.
        var drain: UInt64?
    }

    /// The transport closed the link of `generation` (`serverWindow`: its `Welcome` announced a
    /// de-dup window). Its requests are resent when that is safe, else handed back to be failed.
    mutating func linkClosed(_ generation: UInt64, error: LongLinkError?, serverWindow: Bool) -> LinkClosed {
        let closed = links.closed(generation, error: error)
        ledger.linkClosed(generation)
        inFlightLimits[generation] = nil
        pings[generation] = nil
        activity[generation] = nil
        let loggedIn = closed?.loggedIn ?? false
        let settlement = book.linkEnded(
            generation, resendAllowed: closed?.resendAllowed ?? !links.isStopping, serverWindow: serverWindow,
            loggedIn: loggedIn)
        var drain: UInt64?
        if closed?.role != .current, settlement.resent > 0, case .open(let current) = links.phase {
            drain = current
        }
        if let closed, closed.role == .current { lastEnd = (generation, closed.end) }
        return LinkClosed(
            closed: closed, settlement: settlement, madeBeforeLogin: serverWindow && !loggedIn, drain: drain)
    }

    /// What a server's `GoAway` does.
    struct GoAwayReceived {
        /// Tell the supervisor now (or on its next wait) that the server goes away: it moves to
        /// another endpoint rather than reconnect here after the close.
        var tellSupervisor: Bool
        /// What becomes of the link.
        var link: LinkStateMachine.GoAwayAction
    }

    /// The server of `generation` said `GoAway`: the link drains what was written on it, or closes;
    /// a welcomed current link's server asking the client to come back elsewhere, with somewhere
    /// else to go, has the supervisor move first.
    mutating func receivedGoAway(_ generation: UInt64, _ frame: Frame.GoAway) -> GoAwayReceived {
        let tell =
            frame.reconnect && supervision.hasAlternatives && links.latest == generation
            && links.role(of: generation) == .current && !links.awaitsWelcome(generation)
        let action = links.receivedGoAway(generation, frame, hasWrittenRequests: book.hasWritten(on: generation))
        return GoAwayReceived(tellSupervisor: tell, link: action)
    }

    /// A link the core was handed never became the client's (it dropped before its login, or a
    /// shutdown landed): forgotten, with nothing written on it to settle.
    mutating func linkAbandoned(_ generation: UInt64, error: LongLinkError?) {
        _ = links.closed(generation, error: error)
        ledger.linkClosed(generation)
        inFlightLimits[generation] = nil
        pings[generation] = nil
        activity[generation] = nil
    }

    /// A graceful shutdown begins: the requests not written yet, to fail now (written ones get the
    /// grace period); nil when it began already.
    mutating func beginShutdown() -> [RequestBook<Caller>.Entry]? {
        guard links.beginShutdown() == .failUnwrittenAndWait else { return nil }
        return book.removeUnwritten()
    }

    /// True while shutting down with no request left: the shutdown completes now.
    var shutdownIsIdle: Bool { links.shuttingDown && book.isEmpty }

    /// Every consumer ends (the session ended, or the client stopped) and the ledger starts again
    /// as new (``PushLedger/removeAll()``): the consumers to finish.
    mutating func removeAllConsumers() -> [Consumer] {
        let consumers = ledger.consumers.byID.values.map(\.value)
        consumersToWake.removeAll()
        ledger.removeAll()
        return consumers
    }

    /// How the shutdown ends.
    /// A graceful shutdown until `deadline`: new requests are refused and queued ones fail now, the
    /// supervisor's waits end, and the rest completes (``completeShutdown()``) when the last written
    /// request ends or the timer fires. Asked again while shutting down, a deadline that comes
    /// sooner moves the end forward; a later one changes nothing.
    mutating func shutdown(until deadline: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        if let unwritten = beginShutdown() {
            let shuttingDown = LongLinkError(code: .shutdown, message: "the client is shutting down")
            actions += unwritten.map { .resume($0, .failure(shuttingDown)) }
            actions.append(.wakeRetry(.shutdown))
            if supervision.pendingWake == nil { supervision.pendingWake = .shutdown }
            actions.append(.endLoginWaits)
        } else {
            guard let current = shutdownDeadline, deadline < current else { return [] }
        }
        shutdownDeadline = deadline
        actions.append(.schedule(.shutdown, at: deadline))
        if shutdownIsIdle { actions += completeShutdown() }
        return actions
    }

    /// The grace period ended, or nothing was pending any more: every request still pending fails,
    /// the current link says `GoAway` (after the acks it owes) and closes, or only closes, or the
    /// supervisor's wait on it ends; the side links close (``LinkStateMachine/sideLinks``; one the
    /// current link's close closed already is gone by then), the supervisor's retry wait ends, and
    /// every consumer ends with ``stopReason``.
    mutating func completeShutdown() -> [Action] {
        shutdownDeadline = nil
        let shutDown = LongLinkError(code: .shutdown, message: "the client shut down")
        var actions: [Action] = [.cancel(.shutdown)]
        actions += book.removeAll().map { .resume($0, .failure(shutDown)) }
        let close = links.completeShutdown()
        var acks: [PushLedger<Consumer>.Action] = []
        if case .sayGoAwayAndClose(flushAcks: true) = close { acks = ledger.flushAcks() }
        if let current = links.latest {
            switch close {
            case .sayGoAwayAndClose:
                actions += acks.map(Action.pushes)
                actions.append(.send(.goAway(Frame.GoAway(code: .ok, reason: "client shutting down")), on: current))
                actions.append(.close(current, .graceful, error: nil))
            case .close:
                actions.append(.close(current, .graceful, error: nil))
            case .none:
                actions.append(.wakeSupervisor(current, .ended(.shutdown)))
            }
        }
        actions += links.sideLinks.map { .close($0, .graceful, error: nil) }
        actions.append(.wakeRetry(.shutdown))
        actions.append(.endConsumers(stopReason))
        return actions
    }

    /// Why the client stops or stopped: its terminal error, else a shutdown.
    var stopReason: LongLinkError {
        terminalError ?? LongLinkError(code: .shutdown, message: "the client shut down")
    }
}
