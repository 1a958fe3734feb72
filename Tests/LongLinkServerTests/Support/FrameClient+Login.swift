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
