import LongLinkServer
import LongLinkWire
import Testing

@testable import LongLinkServer

/// A compressed request is admitted before it is inflated, and its limit is the smallest of the
/// frame limit, the ratio and what is left of the connection's budget.
extension ServerSessionStateMachineTests {
    static func inflating(maxInFlight: Int = 1_024, budget: Int = 1 << 20) -> Machine {
        var server = ServerConfiguration()
        server.maxInFlightPerConnection = maxInFlight
        server.maxInflatedBytesPerConnection = budget
        server.maxInflationRatio = 64
        server.maxFrameBytes = 4 << 20
        var machine = Machine(configuration: Machine.Configuration(server))
        _ = machine.receivedHello(Frame.Hello(clientID: "phone-1"))
        return machine
    }

    static func compressed(_ id: String, method: String = "echo", size: Int = 4_000) -> Frame.Request {
        var request = Frame.Request(requestID: id, method: method, payload: [UInt8](repeating: 0, count: size))
        request.compression = 1
        return request
    }

    /// Everything the session checks comes before inflating: a bad id, a copy in flight, the
    /// in-flight limit and an unknown method are answered without an inflation.
    @Test func aCompressedRequestIsAdmittedBeforeItIsInflated() {
        var machine = Self.inflating(maxInFlight: 2)
        guard
            case .inflateAndDispatch(let token, let limit) = machine.receivedRequest(
                Self.compressed("1"), hasHandler: true)
        else {
            Issue.record("an admitted compressed request is to be inflated")
            return
        }
        #expect(limit == InflationLimit(bytes: 4_000 * 64, bound: .ratio, ratio: 64))
        machine.track(requestID: "1", token: token, execution: "run 1")
        guard
            case .reject(let status) = machine.receivedRequest(Self.compressed("2", method: "nope"), hasHandler: false)
        else {
            Issue.record("an unknown method is refused before inflating")
            return
        }
        #expect(status.code == .unimplemented)
        guard case .ignoreCopyInFlight = machine.receivedRequest(Self.compressed("1"), hasHandler: true) else {
            Issue.record("a copy in flight is not inflated again")
            return
        }
        Self.admit("2", on: &machine)
        guard case .rejectOverLimit(let over) = machine.receivedRequest(Self.compressed("3"), hasHandler: true) else {
            Issue.record("past the in-flight limit nothing is inflated")
            return
        }
        #expect(over.code == .resourceExhausted)
        guard case .closeConnection = machine.receivedRequest(Self.compressed(""), hasHandler: true) else {
            Issue.record("an empty request id closes before inflating")
            return
        }
    }

    /// Small payloads may inflate to 64 KiB whatever their ratio; large ones to the frame limit.
    @Test func theLimitIsTheSmallestBound() {
        var machine = Self.inflating(budget: 64 << 20)
        guard
            case .inflateAndDispatch(_, let small) = machine.receivedRequest(
                Self.compressed("1", size: 10), hasHandler: true),
            case .inflateAndDispatch(_, let large) = machine.receivedRequest(
                Self.compressed("2", size: 1 << 20), hasHandler: true)
        else {
            Issue.record("compressed requests are to be inflated")
            return
        }
        #expect(small == InflationLimit(bytes: InflationLimit.ratioFloor, bound: .ratio, ratio: 64))
        #expect(large == InflationLimit(bytes: 4 << 20, bound: .frame, ratio: 64))
    }

    /// What requests in flight hold counts against the budget until they leave the table; past
    /// it a request is refused before inflating.
    @Test func inflatedBytesInFlightAreBudgeted() {
        var machine = Self.inflating(budget: 1 << 20)
        var tokens: [String: UInt64] = [:]
        for id in ["1", "2"] {
            guard
                case .inflateAndDispatch(let token, _) = machine.receivedRequest(Self.compressed(id), hasHandler: true)
            else {
                Issue.record("request \(id) is to be inflated")
                return
            }
            machine.track(requestID: id, token: token, execution: "run \(id)")
            machine.holdInflated(200_000, requestID: id, token: token)
            tokens[id] = token
        }
        #expect(machine.inflatedBytesHeld == 400_000)
        guard case .inflateAndDispatch(_, let limit) = machine.receivedRequest(Self.compressed("3"), hasHandler: true)
        else {
            Issue.record("request 3 is to be inflated")
            return
        }
        #expect(limit == InflationLimit(bytes: 4_000 * 64, bound: .ratio, ratio: 64))
        // "3" ran inline: not in the table, it holds nothing.
        machine.holdInflated(250_000, requestID: "3", token: 99)
        #expect(machine.inflatedBytesHeld == 400_000)
        guard
            case .inflateAndDispatch(let token4, let byBudget) = machine.receivedRequest(
                Self.compressed("4", size: 20_000), hasHandler: true)
        else {
            Issue.record("request 4 is to be inflated")
            return
        }
        #expect(byBudget == InflationLimit(bytes: (1 << 20) - 400_000, bound: .budget, ratio: 64))
        machine.track(requestID: "4", token: token4, execution: "run 4")
        machine.holdInflated((1 << 20) - 400_000, requestID: "4", token: token4)
        guard case .rejectOverLimit(let status) = machine.receivedRequest(Self.compressed("5"), hasHandler: true) else {
            Issue.record("past the budget a request is refused before inflating")
            return
        }
        #expect(status.code == .resourceExhausted)
        // Plain requests hold nothing and pass.
        Self.admit("6", on: &machine)
        guard case .sendResponse = machine.handlerFinished(requestID: "1", token: tokens["1"]!),
            case .cancelRequest = machine.receivedCancel(requestID: "2")
        else {
            Issue.record("requests 1 and 2 leave the table")
            return
        }
        #expect(machine.inflatedBytesHeld == (1 << 20) - 400_000)
        guard case .inflateAndDispatch = machine.receivedRequest(Self.compressed("5"), hasHandler: true) else {
            Issue.record("room again once requests left")
            return
        }
        _ = machine.connectionClosed()
        #expect(machine.inflatedBytesHeld == 0)
    }
}
