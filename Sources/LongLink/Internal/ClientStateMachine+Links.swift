internal import LongLinkWire

/// A link's end and the shutdown: every close path hands back each request it ends, so that the
/// core fails each one once, and says which go out again.
extension ClientStateMachine {
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
        let loggedIn = closed?.loggedIn ?? false
        let settlement = book.linkEnded(
            generation, resendAllowed: closed?.resendAllowed ?? !links.isStopping, serverWindow: serverWindow,
            loggedIn: loggedIn)
        var drain: UInt64?
        if closed?.role != .current, settlement.resent > 0, case .open(let current) = links.phase {
            drain = current
        }
        return LinkClosed(
            closed: closed, settlement: settlement, madeBeforeLogin: serverWindow && !loggedIn, drain: drain)
    }

    /// The server of `generation` said `GoAway`: the link drains what was written on it, or closes.
    mutating func receivedGoAway(_ generation: UInt64, _ frame: Frame.GoAway) -> LinkStateMachine.GoAwayAction {
        links.receivedGoAway(generation, frame, hasWrittenRequests: book.hasWritten(on: generation))
    }

    /// A link the core was handed never became the client's (it dropped before its login, or a
    /// shutdown landed): forgotten, with nothing written on it to settle.
    mutating func linkAbandoned(_ generation: UInt64, error: LongLinkError?) {
        _ = links.closed(generation, error: error)
        ledger.linkClosed(generation)
        inFlightLimits[generation] = nil
    }

    /// A graceful shutdown begins: the requests not written yet, to fail now (written ones get the
    /// grace period); nil when it began already.
    mutating func beginShutdown() -> [RequestBook<Caller>.Entry]? {
        guard links.beginShutdown() == .failUnwrittenAndWait else { return nil }
        return book.removeUnwritten()
    }

    /// True while shutting down with no request left: the shutdown completes now.
    var shutdownIsIdle: Bool { links.shuttingDown && book.isEmpty }

    /// How the shutdown ends.
    struct ShutdownCompletion {
        /// Every request still pending: each fails.
        var failed: [RequestBook<Caller>.Entry]
        /// What becomes of the current link.
        var close: LinkStateMachine.CloseAction
        /// The acks that go out before the current link's `GoAway`.
        var acks: [PushLedger<Consumer>.Action]
    }

    /// The grace period ended, or nothing was pending any more. The core then closes the side
    /// links (``LinkStateMachine/sideLinks``, read after the current link's close, which may have
    /// closed some already) and ends every consumer.
    mutating func completeShutdown() -> ShutdownCompletion {
        let failed = book.removeAll()
        let close = links.completeShutdown()
        var acks: [PushLedger<Consumer>.Action] = []
        if case .sayGoAwayAndClose(flushAcks: true) = close { acks = ledger.flushAcks() }
        return ShutdownCompletion(failed: failed, close: close, acks: acks)
    }
}
