import LongLinkWire
import Testing

@testable import LongLinkServer

/// Every way a session ends hands back every request in flight, once; draining closes when the
/// last one is done.
extension ServerSessionStateMachineTests {
    /// A session with requests "1", "2" and "3" in flight.
    static func busy() -> Machine {
        var machine = Self.active()
        for id in ["1", "2", "3"] { admit(id, on: &machine) }
        return machine
    }

    /// After a close, nothing is in flight and the socket's close hands back nothing more.
    static func expectClosedAndEmpty(_ machine: inout Machine, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(machine.phase == .closed, sourceLocation: sourceLocation)
        #expect(machine.inFlightCount == 0, sourceLocation: sourceLocation)
        #expect(machine.connectionClosed().isEmpty, sourceLocation: sourceLocation)
    }

    @Test("the peer closing hands back every request in flight, with its execution")
    func peerCloseHandsBackEverything() {
        var machine = Self.busy()
        let abandoned = machine.connectionClosed()
        #expect(Set(abandoned.compactMap(\.execution)) == ["run 1", "run 2", "run 3"])
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("a protocol violation hands back every request in flight")
    func aViolationHandsBackEverything() {
        var machine = Self.busy()
        let close = machine.receivedMalformedBytes(code: .invalidArgument, reason: "malformed frame")
        Self.expectViolation(close, "malformed frame")
        #expect(Self.ids(close?.inFlight ?? []) == ["1", "2", "3"])
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("a frame only a server sends is a violation that hands back every request in flight")
    func aServerFrameHandsBackEverything() {
        var machine = Self.busy()
        let close = machine.receivedServerFrame()
        Self.expectViolation(close, "a frame only a server sends")
        #expect(Self.ids(close?.inFlight ?? []) == ["1", "2", "3"])
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("server shutdown: GoAway drains, and the drain timeout hands back what is still in flight")
    func shutdownHandsBackWhatIsLeftAtTheDrainTimeout() {
        var machine = Self.busy()
        let goAway = Frame.GoAway(code: .unavailable, reason: "server shutting down", reconnect: true)
        guard case .sendGoAwayAndDrain(let sent) = machine.goAwayRequested(goAway) else {
            Issue.record("a busy session did not drain")
            return
        }
        #expect(sent == goAway)
        #expect(machine.phase == .draining)
        // A second request to go away (a kick during shutdown) changes nothing.
        guard case .ignore = machine.goAwayRequested(goAway) else {
            Issue.record("a second GoAway was sent")
            return
        }
        // New requests are refused while draining; the ones in flight are not touched.
        guard case .reject(let status) = machine.receivedRequest(Self.request("4"), hasHandler: true) else {
            Issue.record("a draining session admitted a request")
            return
        }
        #expect(status.code == .unavailable)
        let close = machine.drainTimedOut()
        #expect(close?.reason == .drainTimedOut)
        #expect(close?.goAway == nil)  // sent when draining began
        #expect(Self.ids(close?.inFlight ?? []) == ["1", "2", "3"])
        Self.expectClosedAndEmpty(&machine)
        #expect(machine.drainTimedOut() == nil)
    }

    @Test("draining closes as soon as the last request in flight is answered, cancelled or timed out")
    func drainingClosesOnceInFlightIsEmpty() {
        var machine = Self.active()
        let one = Self.admit("1", on: &machine)
        Self.admit("2", on: &machine)
        let three = Self.admit("3", on: &machine)
        guard case .sendGoAwayAndDrain = machine.goAwayRequested(Frame.GoAway(code: .unavailable)) else {
            Issue.record("a busy session did not drain")
            return
        }
        guard case .sendResponse = machine.handlerFinished(requestID: "1", token: one) else {
            Issue.record("the first answer closed the session early")
            return
        }
        guard case .cancelRequest = machine.receivedCancel(requestID: "2") else {
            Issue.record("the cancel closed the session early")
            return
        }
        #expect(machine.phase == .draining)
        guard
            case .failTimedOutAndClose(let timedOut, let close) = machine.handlerTimedOut(requestID: "3", token: three)
        else {
            Issue.record("the last request ending did not close the draining session")
            return
        }
        #expect(timedOut.execution == "run 3")
        #expect(close.reason == .drained)
        #expect(close.inFlight.isEmpty)
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("the last answer of a draining session closes it")
    func theLastAnswerClosesADrainingSession() {
        var machine = Self.active()
        let token = Self.admit("1", on: &machine)
        _ = machine.goAwayRequested(Frame.GoAway(code: .unavailable))
        guard
            case .sendResponseAndClose(let answered, let close) = machine.handlerFinished(requestID: "1", token: token)
        else {
            Issue.record("the last answer did not close the draining session")
            return
        }
        #expect(answered.requestID == "1")
        #expect(close.reason == .drained)
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("a handler running inline counts as in flight: going away during it drains, and its answer closes")
    func goingAwayDuringAnInlineHandlerDrains() {
        var machine = Self.active()
        guard case .dispatch = machine.receivedRequest(Self.request("1"), hasHandler: true) else {
            Issue.record("the request was not dispatched")
            return
        }
        machine.startedInline()
        #expect(machine.inFlightCount == 0)
        guard case .sendGoAwayAndDrain = machine.goAwayRequested(Frame.GoAway(code: .unavailable)) else {
            Issue.record("going away during an inline handler closed without its answer")
            return
        }
        guard case .sendResponseAndClose(let close) = machine.finishedInline() else {
            Issue.record("the inline handler's answer did not close the draining session")
            return
        }
        #expect(close.reason == .drained)
        #expect(close.inFlight.isEmpty)
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("an inline handler's answer is sent while the session is open, and dropped once it closed")
    func anInlineAnswerFollowsThePhase() {
        var machine = Self.active()
        guard case .dispatch = machine.receivedRequest(Self.request("1"), hasHandler: true) else {
            Issue.record("the request was not dispatched")
            return
        }
        machine.startedInline()
        guard case .sendResponse = machine.finishedInline() else {
            Issue.record("an open session's inline answer was not sent")
            return
        }
        // Inline requests leave nothing behind: going away now closes at once.
        guard case .closeConnection = machine.goAwayRequested(Frame.GoAway(code: .unavailable)) else {
            Issue.record("a finished inline request still held the session open")
            return
        }

        var closing = Self.active()
        _ = closing.receivedRequest(Self.request("2"), hasHandler: true)
        closing.startedInline()
        _ = closing.connectionClosed()
        guard case .ignore = closing.finishedInline() else {
            Issue.record("an inline answer was sent after the session closed")
            return
        }
    }

    @Test("going away with nothing in flight closes at once, GoAway first")
    func goingAwayIdleClosesAtOnce() {
        for helloFirst in [true, false] {
            var machine = helloFirst ? Self.active() : Machine(configuration: Self.configuration())
            let goAway = Frame.GoAway(code: .unauthenticated, reason: "logged in elsewhere")
            guard case .closeConnection(let close) = machine.goAwayRequested(goAway) else {
                Issue.record("an idle session waited to drain (Hello first: \(helloFirst))")
                continue
            }
            #expect(close.goAway == goAway)
            #expect(close.reason == .drained)
            Self.expectClosedAndEmpty(&machine)
        }
    }

    @Test("a client's GoAway drains the session; the last Cancel closes it")
    func theClientGoingAwayDrains() {
        var machine = Self.active()
        Self.admit("1", on: &machine)
        #expect(machine.receivedGoAway() == nil)
        #expect(machine.phase == .draining)
        guard case .cancelRequestAndClose(let cancelled, let close) = machine.receivedCancel(requestID: "1") else {
            Issue.record("the last cancel did not close the draining session")
            return
        }
        #expect(cancelled.execution == "run 1")
        #expect(close.goAway == nil)
        Self.expectClosedAndEmpty(&machine)

        var idle = Self.active()
        #expect(idle.receivedGoAway()?.reason == .drained)
        Self.expectClosedAndEmpty(&idle)
    }

    @Test("three silent heartbeat intervals close the session and hand back what is in flight")
    func silenceClosesTheSession() {
        var machine = Self.busy()
        guard case .scheduleNextTick = machine.heartbeatTick(), case .scheduleNextTick = machine.heartbeatTick() else {
            Issue.record("two silent ticks closed the session")
            return
        }
        // Traffic resets the count.
        machine.receivedBytes()
        for tick in 1...3 {
            guard case .scheduleNextTick = machine.heartbeatTick() else {
                Issue.record("tick \(tick) after traffic closed the session")
                return
            }
        }
        guard case .closeConnection(let close) = machine.heartbeatTick() else {
            Issue.record("three silent ticks did not close the session")
            return
        }
        #expect(close.reason == .idle)
        #expect(close.goAway?.code == .unavailable)
        #expect(Self.ids(close.inFlight) == ["1", "2", "3"])
        guard case .stop = machine.heartbeatTick() else {
            Issue.record("a closed session kept ticking")
            return
        }
        Self.expectClosedAndEmpty(&machine)
    }

    @Test("a connection turned away at the limit gets GoAway with a retry delay")
    func theConnectionLimit() {
        var machine = Machine(configuration: Self.configuration())
        let close = machine.rejectedAtConnectionLimit()
        #expect(close.reason == .connectionLimit)
        #expect(close.goAway?.code == .resourceExhausted)
        #expect(close.goAway?.reconnect == true)
        #expect(close.goAway?.retryAfterMilliseconds == 1_000)
        Self.expectClosedAndEmpty(&machine)
    }

    // MARK: Principal, Sync and Ack

    @Test("reliable pushes flow after a binding and a Sync; a new binding waits for the next Sync")
    func bindingAndSync() {
        var machine = Self.active()
        guard case .ignore = machine.receivedAck(seqs: [1]) else {
            Issue.record("an Ack without a principal was acknowledged")
            return
        }
        guard case .rebind(let old) = machine.bound(principal: "alice") else {
            Issue.record("the binding was ignored")
            return
        }
        #expect(old == nil)
        #expect(machine.reliablePushPrincipal == nil)
        guard case .resendReliablePushes = machine.receivedSync() else {
            Issue.record("Sync did not resend")
            return
        }
        #expect(machine.reliablePushPrincipal == "alice")
        guard case .acknowledge(let principal, let seqs) = machine.receivedAck(seqs: [1, 2]) else {
            Issue.record("the Ack was not acknowledged")
            return
        }
        #expect(principal == "alice")
        #expect(seqs == [1, 2])
        guard case .ignore = machine.receivedAck(seqs: []) else {
            Issue.record("an empty Ack was acknowledged")
            return
        }
        guard case .ignore = machine.bound(principal: "alice") else {
            Issue.record("binding the same principal again restarted pushes")
            return
        }
        guard case .rebind(let previous) = machine.bound(principal: "bob") else {
            Issue.record("the new binding was ignored")
            return
        }
        #expect(previous == "alice")
        #expect(machine.reliablePushPrincipal == nil)
        _ = machine.connectionClosed()
        #expect(machine.reliablePushPrincipal == nil)
    }

    @Test("a draining session binds no principal: it has left its principal's connections for good")
    func aDrainingSessionBindsNoPrincipal() {
        var machine = Self.busy()
        guard case .sendGoAwayAndDrain = machine.goAwayRequested(Frame.GoAway(code: .unavailable)) else {
            Issue.record("a busy session did not drain")
            return
        }
        guard case .ignore = machine.bound(principal: "alice") else {
            Issue.record("a draining session was bound (a login answered during the drain)")
            return
        }
        #expect(machine.principal == nil)
    }
}
