import LongLinkWire

// Requests and responses (Protocol.md, "Requests and responses", "Timeouts", "Cancel"): one
// Response per request with its id, refusals by status, Cancel and timeout_ms honoured.
extension ConformRule {
    static let requests: [ConformRule] = [
        ConformRule("requests.unknown-method", "a request for an unknown method gets UNIMPLEMENTED with its request_id")
        {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("unknown-method")
            let response = try link.call("conform.no-such-method", id: "unknown-1")
            let code = response.status?.code ?? .ok
            guard code == .unimplemented else { throw ConformFailure("answered \(code), not UNIMPLEMENTED") }
        },
        ConformRule("requests.empty-request-id", "a request with an empty request_id gets GoAway{INVALID_ARGUMENT}") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("empty-id")
            try link.send(.request(Frame.Request(requestID: "", method: "echo", payload: Array("x".utf8))))
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule(
            "requests.correlation", "many requests in flight are each answered exactly once with their own request_id"
        ) { context throws(ConformFailure) in
            let (link, welcome) = try context.welcomed("correlation")
            _ = try link.require("echo", Array("probe".utf8), id: "echo-probe")
            let count = welcome.maxInFlight == 0 ? 64 : min(64, Int(welcome.maxInFlight))
            let frames = (1...count).map { index in
                Frame.request(
                    Frame.Request(requestID: "echo-\(index)", method: "echo", payload: Array("p\(index)".utf8)))
            }
            try link.socket.send(frames, until: link.stepDeadline)
            var answered: [String: Int] = [:]
            let deadline = link.stepDeadline
            while answered.count < count {
                let frame = try link.take("\(count - answered.count) more echo responses", until: deadline) { frame in
                    if case .response = frame { return true }
                    return false
                }
                guard case .response(let response) = frame else { continue }
                guard response.requestID.hasPrefix("echo-"), let index = Int(response.requestID.dropFirst(5)),
                    (1...count).contains(index)
                else { throw ConformFailure("a Response for request_id '\(response.requestID)', never sent") }
                guard answered[response.requestID] == nil else {
                    throw ConformFailure("request \(response.requestID) was answered twice")
                }
                guard response.status == nil || response.status?.code == .ok,
                    response.payload == Array("p\(index)".utf8)
                else { throw ConformFailure("request \(response.requestID) got \(ConformLink.text(frame))") }
                answered[response.requestID] = 1
            }
            for frame in link.frames(during: .milliseconds(100)) {
                if case .response(let response) = frame {
                    throw ConformFailure("request \(response.requestID) was answered twice")
                }
            }
        },
        ConformRule("requests.cancel", "a Cancel stops a running request: no Response, and the link still answers") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("cancel")
            _ = try link.require("sleep", Array("0".utf8), id: "sleep-probe")
            try link.send(
                .request(Frame.Request(requestID: "sleep-1", method: "sleep", payload: Array("1000".utf8))),
                .cancel(Frame.Cancel(requestID: "sleep-1")))
            try link.roundTrip(nonce: 31)
            // The sleep would have finished by now had the Cancel been ignored.
            for frame in link.frames(during: .milliseconds(1500)) {
                if case .response(let response) = frame, response.requestID == "sleep-1" {
                    throw ConformFailure("the cancelled request was answered: \(ConformLink.text(frame))")
                }
            }
            try link.roundTrip(nonce: 32)
        },
        ConformRule("requests.timeout", "a request whose timeout_ms runs out gets DEADLINE_EXCEEDED") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("timeout")
            _ = try link.require("sleep", Array("0".utf8), id: "sleep-probe")
            let response = try link.call("sleep", Array("60000".utf8), id: "sleep-1", timeoutMilliseconds: 200)
            let code = response.status?.code ?? .ok
            guard code == .deadlineExceeded else { throw ConformFailure("answered \(code), not DEADLINE_EXCEEDED") }
        },
    ]
}
