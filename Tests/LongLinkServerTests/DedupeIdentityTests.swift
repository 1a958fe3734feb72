import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// Whose requests the de-duplication window answers: nothing made before a login (a client is
/// anyone then), client and request ids by their bytes, and a login answered from the window
/// binds as the original did. Real server, real loopback sockets.
@Suite("De-duplication identities", .sharedMachine)
struct DedupeIdentityTests {
    /// A connection with `clientID`, past its handshake, logged in as no one.
    static func anonymous(_ address: SocketAddress, clientID: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: clientID)
        return client
    }

    /// A login reply (here the "welcome" a token would be in) made before any binding is never
    /// replayed to another connection presenting the same client id and request id: the copy runs
    /// the login itself, and is bound by it.
    @Test func aPreLoginReplyIsNeverReplayedToAnotherConnection() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let owner = try await Self.anonymous(address, clientID: "shared-id")
            #expect(try await owner.call("login", bytes("alice"), id: "login-1").text == "welcome")
            #expect(try await owner.call("count", id: "c1").text == "execution 1")
            owner.close()
            // A stranger with the same ids, before any login.
            let stranger = try await Self.anonymous(address, clientID: "shared-id")
            #expect(try await stranger.call("whoami", id: "w0").text == "-")
            #expect(try await stranger.call("login", bytes("mallory"), id: "login-1").text == "welcome")
            #expect(try await stranger.call("whoami", id: "w1").text == "mallory")
            let anonymous = try await Self.anonymous(address, clientID: "shared-id")
            #expect(try await anonymous.call("count", id: "c1").text == "execution 2")
            #expect(try await anonymous.call("count", id: "c1").text == "execution 3")
            #expect(server.statistics.requestsReplayed == 0)
            // Only what was sent after a login is held: alice's count and mallory's whoami.
            #expect(server.statistics.dedupeEntries == 2)
        }
    }

    /// A login sent on a bound connection is de-duplicated like any request: its copy on a new
    /// connection of the same client and principal, answered from the stored reply, binds that
    /// connection as the login bound its own.
    @Test func aReplayedLoginBindsAsTheOriginalDid() async throws {
        try await withServer { server, address in
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "alice")
            #expect(try await first.call("login", bytes("bob"), id: "switch").text == "welcome")
            #expect(try await first.call("whoami", id: "w1").text == "bob")
            first.close()
            let second = try await FrameClient.loggedIn(address, clientID: "phone", as: "alice")
            var copy = Frame.Request(requestID: "switch", method: "login", payload: bytes("bob"))
            copy.resent = true
            try await second.send(.request(copy))
            #expect(try await second.response().text == "welcome")
            #expect(server.statistics.requestsReplayed == 1)
            #expect(try await second.call("whoami", id: "w2").text == "bob")
        }
    }

    /// The same for a copy that joins the login while it still runs.
    @Test func aJoinedLoginBindsAsTheOriginalDid() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "alice")
            try await first.send(
                .request(Frame.Request(requestID: "switch", method: "login.gated", payload: bytes("bob"))))
            #expect(try await probe.events.next() == "started switch")
            first.close()
            let second = try await FrameClient.loggedIn(address, clientID: "phone", as: "alice")
            try await second.send(
                .request(Frame.Request(requestID: "switch", method: "login.gated", payload: bytes("bob"))))
            #expect(try await second.call("whoami", id: "before").text == "alice")
            #expect(server.statistics.requestsJoined == 1)
            probe.gate.put(())
            #expect(try await second.response().text == "welcome")
            #expect(try await second.call("whoami", id: "after").text == "bob")
        }
    }

    /// "\u{E9}" and "e\u{301}" are one Swift `String` and two client ids: two clients, each with
    /// its own executions, and an exclusive login of one ends the other's session.
    @Test func clientIDsAreTheirBytes() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            #expect("\u{E9}" == "e\u{301}")
            let composed = try await FrameClient.loggedIn(address, clientID: "\u{E9}", as: "ann")
            let decomposed = try await FrameClient.loggedIn(address, clientID: "e\u{301}", as: "ann")
            #expect(try await composed.call("count", id: "1").text == "execution 1")
            #expect(try await decomposed.call("count", id: "1").text == "execution 2")
            #expect(server.statistics.requestsReplayed == 0)
            // An exclusive login from one ends the other client's session.
            let id = "exclusive-\(UInt64.random(in: 0...UInt64.max))"
            #expect(try await decomposed.call("login.exclusive", bytes("ann"), id: id).text == "welcome")
            let ended = try await composed.take("the GoAway of the other client") {
                if case .goAway = $0 { true } else { false }
            }
            guard case .goAway(let goAway) = ended else { return }
            #expect(goAway.code == .unauthenticated && !goAway.reconnect)
            #expect(server.statistics.sessionsReplaced == 1)
        }
    }

    /// Request ids too: two requests in flight on one connection under "\u{E9}" and "e\u{301}"
    /// are two requests, each answered.
    @Test func requestIDsAreTheirBytes() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.loggedIn(address, clientID: "phone", as: "ann")
            try await client.send(.request(Frame.Request(requestID: "\u{E9}", method: "gated", payload: bytes("!"))))
            #expect(try await probe.events.next() == "started \u{E9}")
            try await client.send(.request(Frame.Request(requestID: "e\u{301}", method: "echo", payload: bytes("2"))))
            let echoed = try await client.response()
            #expect(Array(echoed.requestID.utf8) == Array("e\u{301}".utf8) && echoed.text == "2")
            probe.gate.put(())
            let gated = try await client.response()
            #expect(Array(gated.requestID.utf8) == Array("\u{E9}".utf8) && gated.text == "execution 1!")
        }
    }
}
