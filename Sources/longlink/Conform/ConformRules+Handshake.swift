import LongLinkWire

// The handshake (Protocol.md, "The handshake"): Welcome for a good Hello, GoAway and a close for
// every refusal in its table.
extension ConformRule {
    static let handshake: [ConformRule] = [
        ConformRule(
            "handshake.welcome",
            "Hello is answered by Welcome with version 1, a non-empty server_id and a load of 0...1000"
        ) {
            context throws(ConformFailure) in
            let (_, welcome) = try context.welcomed("welcome")
            guard welcome.version == Frame.protocolVersion else {
                throw ConformFailure("Welcome.version is \(welcome.version)")
            }
            guard !welcome.serverID.isEmpty else { throw ConformFailure("Welcome.server_id is empty") }
            guard welcome.loadPermille <= 1000 else {
                throw ConformFailure("Welcome.load_permille is \(welcome.loadPermille), above 1000")
            }
        },
        ConformRule(
            "handshake.first-frame-not-hello",
            "a first frame other than Hello gets GoAway{INVALID_ARGUMENT} and a close"
        ) {
            context throws(ConformFailure) in
            let link = try context.connect()
            try link.send(.ping(Frame.Ping(nonce: 1)))
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule(
            "handshake.empty-client-id", "Hello with an empty client_id gets GoAway{INVALID_ARGUMENT} and a close"
        ) {
            context throws(ConformFailure) in
            let link = try context.connect()
            try link.send(.hello(Frame.Hello(clientID: "")))
            try link.expectGoAway(.invalidArgument)
        },
        ConformRule(
            "handshake.unsupported-version",
            "Hello with version 2 gets GoAway{FAILED_PRECONDITION, reconnect: false} and a close"
        ) { context throws(ConformFailure) in
            let link = try context.connect()
            try link.send(.hello(Frame.Hello(version: 2, clientID: context.clientID("version"))))
            try link.expectGoAway(.failedPrecondition, reconnect: false)
        },
        ConformRule("handshake.second-hello", "a second Hello gets GoAway{INVALID_ARGUMENT} and a close") {
            context throws(ConformFailure) in
            let (link, _) = try context.welcomed("second-hello")
            try link.send(.hello(Frame.Hello(clientID: context.clientID("second-hello"))))
            try link.expectGoAway(.invalidArgument)
        },
    ]
}
