import LongLinkWire
import LongLinkTestSupport
import Testing

@testable import LongLinkServer

/// The session's state machine driven directly, without sockets: the execution attached to a
/// request is a label.
@Suite("Server session state machine", .sharedMachine)
struct ServerSessionStateMachineTests {
    typealias Machine = ServerSessionStateMachine<String>

    static func configuration(maxInFlight: Int = 1_024) -> Machine.Configuration {
        var server = ServerConfiguration()
        server.defaultHeartbeat = .seconds(15)
        server.minimumHeartbeat = .milliseconds(50)
        server.maximumHeartbeat = .seconds(300)
        server.maxInFlightPerConnection = maxInFlight
        return Machine.Configuration(server)
    }

    /// A machine past its `Hello`.
    static func active(maxInFlight: Int = 1_024) -> Machine {
        var machine = Machine(configuration: configuration(maxInFlight: maxInFlight))
        guard case .sendWelcome = machine.receivedHello(Frame.Hello(clientID: "phone-1")) else {
            Issue.record("Hello did not open the session")
            return machine
        }
        return machine
    }

    static func request(_ id: String, method: String = "echo") -> Frame.Request {
        Frame.Request(requestID: id, method: method)
    }

    /// Admits request `id`, attaches the execution `"run <id>"`, and returns its token.
    @discardableResult
    static func admit(_ id: String, on machine: inout Machine, sourceLocation: SourceLocation = #_sourceLocation)
        -> UInt64
    {
        guard case .dispatch(let token) = machine.receivedRequest(request(id), hasHandler: true) else {
            Issue.record("request \(id) was not dispatched", sourceLocation: sourceLocation)
            return 0
        }
        machine.track(requestID: id, token: token, execution: "run \(id)")
        return token
    }

    static func ids(_ requests: [Machine.InFlightRequest]) -> Set<String> {
        Set(requests.map(\.requestID))
    }

    static func expectViolation(
        _ close: Machine.Close?, _ reason: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(close?.reason == .protocolViolation, sourceLocation: sourceLocation)
        #expect(close?.goAway?.code == .invalidArgument, sourceLocation: sourceLocation)
        #expect(close?.goAway?.reason == reason, sourceLocation: sourceLocation)
        #expect(close?.goAway?.reconnect == true, sourceLocation: sourceLocation)
    }

    // MARK: Handshake

    /// Every frame a client may send, as the event it is, returning the close it causes if any.
    enum FirstFrame: String, CaseIterable, CustomTestStringConvertible {
        case request, cancel, ack, sync, ping, goAway, pong, welcome

        var testDescription: String { rawValue }

        func send(to machine: inout Machine) -> Machine.Close? {
            switch self {
            case .request:
                guard
                    case .closeConnection(let close) = machine.receivedRequest(.init(requestID: "1"), hasHandler: true)
                else { return nil }
                return close
            case .cancel:
                guard case .closeConnection(let close) = machine.receivedCancel(requestID: "1") else { return nil }
                return close
            case .ack:
                guard case .closeConnection(let close) = machine.receivedAck(seqs: [1]) else { return nil }
                return close
            case .sync:
                guard case .closeConnection(let close) = machine.receivedSync() else { return nil }
                return close
            case .ping:
                guard case .closeConnection(let close) = machine.receivedPing() else { return nil }
                return close
            case .goAway: return machine.receivedGoAway()
            case .pong: return machine.receivedIgnorableFrame()
            case .welcome: return machine.receivedServerFrame()
            }
        }
    }

    @Test("a first frame other than Hello is a protocol violation", arguments: FirstFrame.allCases)
    func theFirstFrameMustBeHello(frame: FirstFrame) {
        var machine = Machine(configuration: Self.configuration())
        let close = frame.send(to: &machine)
        Self.expectViolation(close, "the first frame must be Hello")
        #expect(machine.phase == .closed)
        // Closed: a Hello now changes nothing.
        guard case .ignore = machine.receivedHello(Frame.Hello(clientID: "phone-1")) else {
            Issue.record("a closed session answered a Hello")
            return
        }
    }

    @Test("Hello opens the session with the heartbeat clamped to the configured bounds")
    func helloNegotiatesTheHeartbeat() {
        let cases: [(proposed: UInt32, expected: Duration)] = [
            (0, .seconds(15)), (10, .milliseconds(50)), (2_000, .seconds(2)), (1_000_000, .seconds(300)),
        ]
        for (proposed, expected) in cases {
            var machine = Machine(configuration: Self.configuration())
            let action = machine.receivedHello(Frame.Hello(clientID: "phone-1", heartbeatMilliseconds: proposed))
            guard case .sendWelcome(let heartbeat) = action else {
                Issue.record("no Welcome for heartbeat \(proposed)")
                continue
            }
            #expect(heartbeat == expected, "proposed \(proposed) ms")
            #expect(machine.heartbeat == expected)
            #expect(machine.phase == .active)
            #expect(machine.clientID == "phone-1")
        }
    }

    @Test("a Hello of another protocol version is turned away for good")
    func anotherVersionIsTurnedAway() {
        var machine = Machine(configuration: Self.configuration())
        guard case .closeConnection(let close) = machine.receivedHello(Frame.Hello(version: 2, clientID: "p")) else {
            Issue.record("version 2 was accepted")
            return
        }
        #expect(close.reason == .unsupportedVersion)
        #expect(close.goAway?.code == .failedPrecondition)
        #expect(close.goAway?.reconnect == false)
        #expect(machine.phase == .closed)
    }

    @Test("a client_id of 0 or more than 128 bytes is a protocol violation")
    func theClientIDIsBounded() {
        for clientID in ["", String(repeating: "x", count: 129)] {
            var machine = Machine(configuration: Self.configuration())
            guard case .closeConnection(let close) = machine.receivedHello(Frame.Hello(clientID: clientID)) else {
                Issue.record("client_id of \(clientID.utf8.count) bytes was accepted")
                continue
            }
            Self.expectViolation(close, "client_id must be 1 to 128 bytes")
        }
        var machine = Machine(configuration: Self.configuration())
        guard case .sendWelcome = machine.receivedHello(Frame.Hello(clientID: String(repeating: "x", count: 128)))
        else {
            Issue.record("a client_id of 128 bytes was refused")
            return
        }
    }

    @Test("a second Hello is a violation and hands back what is in flight")
    func aSecondHelloIsAViolation() {
        var machine = Self.active()
        Self.admit("1", on: &machine)
        guard case .closeConnection(let close) = machine.receivedHello(Frame.Hello(clientID: "phone-1")) else {
            Issue.record("a second Hello was accepted")
            return
        }
        Self.expectViolation(close, "a second Hello")
        #expect(close.inFlight.map(\.execution) == ["run 1"])
    }

    @Test("the handshake timeout closes only a session still waiting for Hello")
    func handshakeTimeout() {
        var waiting = Machine(configuration: Self.configuration())
        Self.expectViolation(waiting.handshakeTimedOut(), "no Hello within the handshake timeout")
        var active = Self.active()
        #expect(active.handshakeTimedOut() == nil)
        #expect(active.phase == .active)
    }

    // MARK: Requests

    @Test("requests after Hello are dispatched with distinct tokens")
    func requestsAreDispatched() {
        var machine = Self.active()
        let first = Self.admit("1", on: &machine)
        let second = Self.admit("2", on: &machine)
        #expect(first != second)
        #expect(machine.inFlightCount == 2)
    }

    @Test("a request_id of 0 or more than 128 bytes is a violation")
    func theRequestIDIsBounded() {
        for id in ["", String(repeating: "7", count: 129)] {
            var machine = Self.active()
            Self.admit("ok", on: &machine)
            guard case .closeConnection(let close) = machine.receivedRequest(Self.request(id), hasHandler: true) else {
                Issue.record("request_id of \(id.utf8.count) bytes was accepted")
                continue
            }
            Self.expectViolation(close, "request_id must be 1 to 128 bytes")
            #expect(Self.ids(close.inFlight) == ["ok"])
        }
    }

    @Test("a method without a handler is answered UNIMPLEMENTED and nothing stays in flight")
    func anUnknownMethodIsUnimplemented() {
        var machine = Self.active()
        guard case .reject(let status) = machine.receivedRequest(Self.request("1", method: "nope"), hasHandler: false)
        else {
            Issue.record("an unknown method was dispatched")
            return
        }
        #expect(status.code == .unimplemented)
        #expect(status.message == "unknown method 'nope'")
        #expect(machine.inFlightCount == 0)
    }

    @Test("the in-flight limit refuses one more, and an answer makes room again")
    func theInFlightLimit() {
        var machine = Self.active(maxInFlight: 2)
        let first = Self.admit("1", on: &machine)
        Self.admit("2", on: &machine)
        guard case .rejectOverLimit(let status) = machine.receivedRequest(Self.request("3"), hasHandler: true) else {
            Issue.record("a third request was admitted over a limit of 2")
            return
        }
        #expect(status.code == .resourceExhausted)
        guard case .sendResponse = machine.handlerFinished(requestID: "1", token: first) else {
            Issue.record("the first request's answer was not sent")
            return
        }
        Self.admit("3", on: &machine)
    }

    @Test("a copy of a request in flight on the same connection is not run again")
    func aDuplicateInFlightIsIgnored() {
        var machine = Self.active()
        let token = Self.admit("7", on: &machine)
        guard case .ignoreCopyInFlight = machine.receivedRequest(Self.request("7"), hasHandler: true) else {
            Issue.record("the copy was not recognised")
            return
        }
        #expect(machine.inFlightCount == 1)
        // The one answer serves both; the id is free again afterwards, under a new token.
        guard case .sendResponse(let answered) = machine.handlerFinished(requestID: "7", token: token) else {
            Issue.record("the answer was not sent")
            return
        }
        #expect(answered.execution == "run 7")
        #expect(Self.admit("7", on: &machine) != token)
    }

    @Test("Cancel hands back the request's execution; its handler's late answer is ignored")
    func cancelOfARequestInFlight() {
        var machine = Self.active()
        let token = Self.admit("1", on: &machine)
        guard case .cancelRequest(let cancelled) = machine.receivedCancel(requestID: "1") else {
            Issue.record("Cancel did not cancel")
            return
        }
        #expect(cancelled.execution == "run 1")
        #expect(machine.inFlightCount == 0)
        guard case .ignore = machine.handlerFinished(requestID: "1", token: token) else {
            Issue.record("an answer after Cancel was sent")
            return
        }
        guard case .ignore = machine.handlerTimedOut(requestID: "1", token: token) else {
            Issue.record("a timeout after Cancel was answered")
            return
        }
        guard case .ignore = machine.receivedCancel(requestID: "1") else {
            Issue.record("a second Cancel found something")
            return
        }
    }

    @Test("an answer for an earlier admission of the same id does not answer the new one")
    func aStaleTokenIsIgnored() {
        var machine = Self.active()
        let old = Self.admit("1", on: &machine)
        _ = machine.receivedCancel(requestID: "1")
        let new = Self.admit("1", on: &machine)
        guard case .ignore = machine.handlerFinished(requestID: "1", token: old) else {
            Issue.record("the cancelled handler's answer was taken for the new request")
            return
        }
        guard case .failTimedOut(let timedOut) = machine.handlerTimedOut(requestID: "1", token: new) else {
            Issue.record("the new request's timeout was ignored")
            return
        }
        #expect(timedOut.token == new)
        guard case .ignore = machine.handlerFinished(requestID: "1", token: new) else {
            Issue.record("an answer after the timeout was sent")
            return
        }
    }

    @Test("a handler finishing after the connection closed is ignored")
    func anAnswerAfterCloseIsIgnored() {
        var machine = Self.active()
        let token = Self.admit("1", on: &machine)
        #expect(Self.ids(machine.connectionClosed()) == ["1"])
        guard case .ignore = machine.handlerFinished(requestID: "1", token: token) else {
            Issue.record("an answer after close was sent")
            return
        }
        guard case .ignore = machine.receivedRequest(Self.request("2"), hasHandler: true) else {
            Issue.record("a closed session admitted a request")
            return
        }
    }
}
