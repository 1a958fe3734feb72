import LongLinkWire

// De-duplication (Protocol.md, "De-duplication and resending"): with dedupe_window_ms > 0, a copy
// of a finished request from the same client and principal gets the stored reply, and a copy
// naming another method is refused. `count` replies differently on each run, so a second run
// shows.
extension ConformRule {
    static let dedupe: [ConformRule] = [
        ConformRule(
            "dedupe.replay",
            "a request resent on a new connection (same client_id and user, resent: true) is not run again"
        ) { context throws(ConformFailure) in
            let (first, second) = try Self.resendSetup(context, purpose: "replay")
            let response = try second.call("count", id: first.id, resent: true)
            let code = response.status?.code ?? .ok
            guard code == .ok else { throw ConformFailure("the copy was answered \(code)") }
            guard response.payload == first.reply else {
                throw ConformFailure(
                    "it ran again: the first reply was \(Self.text(first.reply)), the copy's \(Self.text(response.payload))"
                )
            }
        },
        ConformRule(
            "dedupe.method-mismatch", "a copy of a request id naming another method gets INVALID_ARGUMENT"
        ) { context throws(ConformFailure) in
            let (first, second) = try Self.resendSetup(context, purpose: "mismatch")
            let response = try second.call("echo", Array("x".utf8), id: first.id, resent: true)
            let code = response.status?.code ?? .ok
            guard code == .invalidArgument else { throw ConformFailure("answered \(code), not INVALID_ARGUMENT") }
        },
    ]

    /// Logs in, runs `count` once, drops the connection, and logs in again as the same user with the
    /// same client id: the first run's id and reply, and the second connection.
    private static func resendSetup(_ context: ConformContext, purpose: String) throws(ConformFailure)
        -> (first: (id: String, reply: [UInt8]), second: ConformLink)
    {
        let clientID = context.clientID("dedupe-\(purpose)")
        let user = context.user("dedupe-\(purpose)")
        let reply: [UInt8]
        do {
            let link = try context.connect()
            let welcome = try link.handshake(clientID: clientID)
            guard welcome.dedupeWindowMilliseconds > 0 else {
                throw .skip("Welcome.dedupe_window_ms is 0: the server does not de-duplicate")
            }
            try link.login(user, id: "login-1")
            reply = try link.require("count", id: "count-1")
        }
        let link = try context.connect()
        _ = try link.handshake(clientID: clientID)
        try link.login(user, id: "login-2")
        return ((id: "count-1", reply: reply), link)
    }

    private static func text(_ payload: [UInt8]) -> String {
        FrameJSON.printableText(payload).map { "'\($0)'" } ?? "\(payload.count) bytes"
    }
}
