import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLink

/// The one mapping from a link's end (or an attempt's error) to the cause a state carries, as a
/// table; the heartbeat's dead link marked so that it maps; and what a state with a cause prints.
@Suite("Disconnect causes", .sharedMachine)
struct DisconnectCauseTests {
    static let tlsError = LongLinkError(
        code: .tlsFailure, message: "the server's public key is not one of the pinned keys: x",
        underlying: TLSFailure(reason: .pinMismatch, detail: "x"))
    static let timeout = LongLinkError(code: .connectTimeout, message: "no Welcome within the connect timeout")
    static let violation = LongLinkError(code: .protocolViolation, message: "unexpected frame")
    static let dead = LongLinkError(
        code: .connectionLost, message: "nothing received for two heartbeat intervals",
        underlying: LossMark.heartbeatTimeout)
    static let expired = LongLinkError(
        code: .unauthenticated, message: "credential expired", underlying: LossMark.credentialExpired)
    static let providerExpired = LongLinkError(
        code: .unauthenticated, message: "login rejected: credential expired: the provider handed out an expired one",
        underlying: LongLinkError(
            code: .unauthenticated, message: "credential expired", underlying: LossMark.credentialExpired))
    static let rejected = LongLinkError(code: .unauthenticated, message: "login rejected: bad credentials")

    static let table: [(LinkEnd, DisconnectCause)] = [
        (.closed(LongLinkError(code: .connectionReset, message: "reset")), .resetByPeer),
        (.closed(nil), .closedByPeer),
        (.closed(LongLinkError(code: .connectionClosed, message: "the server closed the connection")), .closedByPeer),
        (.closed(dead), .heartbeatTimeout),
        // Unmarked, a lost link is not the heartbeat's verdict.
        (
            .closed(LongLinkError(code: .connectionLost, message: "the link dropped before login")),
            .other(LongLinkError(code: .connectionLost, message: "the link dropped before login"))
        ),
        (.closed(tlsError), .tlsFailure("the server's public key is not one of the pinned keys: x")),
        (.closed(LongLinkError(code: .connectionRefused, message: "refused")), .connectionRefused),
        (.closed(LongLinkError(code: .addressResolutionFailed, message: "no such host")), .dnsFailure),
        (.closed(expired), .credentialExpired),
        (.closed(providerExpired), .credentialExpired),
        (.closed(rejected), .other(rejected)),
        (.closed(LongLinkError(code: .shutdown, message: "the client is shutting down")), .requestedByApp),
        (.shutdown, .requestedByApp),
        (.closed(timeout), .other(timeout)),
        (.closed(violation), .other(violation)),
        (
            .goAway(Frame.GoAway(code: .unavailable, reason: "server shutting down", reconnect: true)),
            .goAway(.unavailable, reason: "server shutting down")
        ),
        (
            .goAway(Frame.GoAway(code: .unauthenticated, reason: "credential expired", reconnect: true)),
            .credentialExpired
        ),
        (
            .goAway(Frame.GoAway(code: .unauthenticated, reason: "logged in elsewhere", reconnect: false)),
            .kicked(reason: "logged in elsewhere")
        ),
        (
            .goAway(Frame.GoAway(code: .resourceExhausted, reason: "server at its connection limit", reconnect: true)),
            .goAway(.resourceExhausted, reason: "server at its connection limit")
        ),
    ]

    @Test(arguments: Self.table)
    func theEndMapsToItsCause(_ end: LinkEnd, _ cause: DisconnectCause) {
        #expect(DisconnectCause(end) == cause, "\(end)")
    }

    @Test func causesPrintAFewWords() {
        #expect("\(DisconnectCause.resetByPeer)" == "reset by peer")
        #expect("\(DisconnectCause.heartbeatTimeout)" == "heartbeat timeout")
        #expect("\(DisconnectCause.goAway(.unavailable, reason: "server shutting down"))"
            == "GoAway UNAVAILABLE: server shutting down")
        #expect("\(DisconnectCause.kicked(reason: "logged in elsewhere"))" == "kicked: logged in elsewhere")
        #expect("\(DisconnectCause.other(Self.timeout))" == "connectTimeout: no Welcome within the connect timeout")
        #expect(DisconnectCause.other(Self.timeout) != .other(Self.violation))
        #expect(DisconnectCause.kicked(reason: "a") != .kicked(reason: "b"))
    }

    @Test func theHeartbeatsDeadLinkAndTheProbesMapToAHeartbeatTimeout() {
        let now = ContinuousClock.now
        var driver = MachineDriver()
        let link = driver.connect()
        var actions: [MachineDriver.Machine.Action] = []
        for _ in 1...(2 * HeartbeatMonitor.ticksPerInterval) {
            actions = driver.machine.heartbeatTicked(link, now: now, interval: .milliseconds(250))
        }
        #expect(Self.closeCause(actions, link) == .heartbeatTimeout)

        let probed = driver.connect()
        _ = driver.machine.probeLiveness(probed, now: now, timeout: .seconds(1))
        #expect(Self.closeCause(driver.machine.probeTimedOut(probed, ended: false), probed) == .heartbeatTimeout)
    }

    @Test func aStatePrintsItsCause() {
        let endpoint = Endpoint.tcp(host: "127.0.0.1", port: 7100)
        let waiting = ConnectionState(
            phase: .waitingToReconnect, endpoint: endpoint, reason: "\(DisconnectCause.heartbeatTimeout)",
            retryDelay: .milliseconds(400), cause: .heartbeatTimeout)
        #expect("\(waiting)" == "waitingToReconnect 127.0.0.1:7100 (heartbeat timeout) retry in 400 ms")
        #expect(waiting.cause == .heartbeatTimeout)
        #expect(ConnectionState(phase: .connected, reason: "logged in to server s1").cause == nil)
    }

    /// The cause of the error `actions` close `link` with.
    private static func closeCause(_ actions: [MachineDriver.Machine.Action], _ link: UInt64) -> DisconnectCause? {
        for case .close(let generation, _, let error) in actions where generation == link {
            return DisconnectCause(.closed(error))
        }
        return nil
    }
}
