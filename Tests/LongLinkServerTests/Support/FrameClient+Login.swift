import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

extension FrameClient {
    /// Logs in as `principal` with a fresh request id: only a connection bound to a principal has
    /// its requests de-duplicated (and under one client id a second login with the same id would
    /// be a resend, answered from the window).
    func logIn(as principal: String) async throws {
        let id = "login-\(UInt64.random(in: 0...UInt64.max))"
        let reply = try await call("login", bytes(principal), id: id)
        #expect(reply.text == "welcome", "login as \(principal): \(reply)")
    }

    /// A connection with `clientID`, logged in as `principal`.
    static func loggedIn(_ address: SocketAddress, clientID: String, as principal: String = "alice") async throws
        -> FrameClient
    {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: clientID)
        try await client.logIn(as: principal)
        return client
    }
}

extension FrameClient {
    /// The seqs of the pushes that arrive before the reply to a fence request (the probe's
    /// `echo.sync`, answered on the loop, so every push sent before it arrives first).
    func seqsBeforeFence(_ fence: String) async throws -> [UInt64] {
        try await send(.request(Frame.Request(requestID: fence, method: "echo.sync")))
        var seqs: [UInt64] = []
        while true {
            switch try await nextFrame() {
            case .push(let push): seqs.append(push.seq)
            case .response(let response) where response.requestID == fence: return seqs
            case let other:
                Issue.record("unexpected frame \(other)")
                return seqs
            }
        }
    }
}
