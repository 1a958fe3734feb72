import LongLinkWire

// Closing (Protocol.md, "GoAway"): after the client's GoAway{OK} the server still answers the
// requests in flight before it closes.
extension ConformRule {
    static let closing: [ConformRule] = [
        ConformRule(
            "goaway.client-drain",
            "a request in flight at the client's GoAway{OK} is still answered, then the link closes"
        ) { context throws(ConformFailure) in
            let (link, _) = try context.welcomed("drain")
            _ = try link.require("sleep", Array("0".utf8), id: "sleep-probe")
            try link.send(
                .request(Frame.Request(requestID: "sleep-1", method: "sleep", payload: Array("300".utf8))),
                .goAway(Frame.GoAway(code: .ok, reason: "conform: client done")))
            let response = try link.response(to: "sleep-1")
            let code = response.status?.code ?? .ok
            guard code == .ok else { throw ConformFailure("the request in flight was answered \(code)") }
            // The client closes its side once answered; the server must then close too.
            link.socket.shutdownWrite()
            try link.expectClose(after: "the client's GoAway and end of stream")
        }
    ]
}
