import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// "caf\u{E9}" (NFC) and "cafe\u{301}" (NFD) are equal Swift `String`s but different bytes, and
/// so two principals: on one server as in Redis.
@Suite("Principals are their UTF-8 bytes", .sharedMachine)
struct PrincipalBytesTests {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// A connection with `clientID`, logged in as `user` and synced.
    private func loggedIn(
        _ address: SocketAddress, as user: String, clientID: String, exclusive: Bool = false
    ) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: clientID)
        // A fresh id: under one client id, a second "login" would be a resend, answered from the window.
        let id = "login-\(UInt64.random(in: 0...UInt64.max))"
        #expect(try await client.call(exclusive ? "login.exclusive" : "login", bytes(user), id: id).text == "welcome")
        // Bytes, not String equality, which would take either spelling for the other.
        #expect(try await client.call("whoami", id: "whoami-\(id)").payload == bytes(user))
        try await client.send(.sync(Frame.Sync()))
        // The echo's reply comes after the Sync was read (one connection, in order).
        #expect(try await client.call("echo", id: "synced").requestID == "synced")
        return client
    }

    @Test func pushesAndAcksOfOneSpellingNeverTouchTheOther() async throws {
        #expect(Self.composed == Self.decomposed)  // what a table keyed by String would merge
        try await withServer { server, address in
            let nfc = try await loggedIn(address, as: Self.composed, clientID: "nfc")
            let nfd = try await loggedIn(address, as: Self.decomposed, clientID: "nfd")
            let toNFC = try await server.push(to: Self.composed, topic: "t", payload: bytes("for nfc"))
            try await server.push(to: Self.decomposed, topic: "t", payload: bytes("for nfd"))
            for (client, expected) in [(nfc, "for nfc"), (nfd, "for nfd")] {
                guard case .push(let push) = try await client.nextFrame() else {
                    Issue.record("expected a push")
                    return
                }
                #expect(push.payload == bytes(expected))
                // Nothing else: the other principal's push never came here.
                #expect(try await client.call("echo", id: "fence").requestID == "fence")
            }
            try await nfc.send(.ack(Frame.Ack(seqs: [toNFC])))
            #expect(try await nfc.call("echo", id: "acked").requestID == "acked")
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: Self.composed) == 0)
            #expect(server.core.immediatePushes?.unacknowledgedCount(principal: Self.decomposed) == 1)
        }
    }

    @Test func anExclusiveLoginEndsOnlyItsOwnSpellingsSessions() async throws {
        try await withServer { server, address in
            let nfc = try await loggedIn(address, as: Self.composed, clientID: "nfc")
            let nfd = try await loggedIn(address, as: Self.decomposed, clientID: "nfd")
            let newer = try await loggedIn(address, as: Self.decomposed, clientID: "nfd-tablet", exclusive: true)
            guard case .goAway(let goAway) = try await nfd.nextFrame() else {
                Issue.record("expected the older session of the same bytes to end")
                return
            }
            #expect(goAway.code == .unauthenticated && !goAway.reconnect)
            // The other spelling's session lives on.
            #expect(try await nfc.call("whoami", id: "still").payload == bytes(Self.composed))
            #expect(server.statistics.sessionsReplaced == 1)
            #expect(try await newer.call("whoami", id: "me").payload == bytes(Self.decomposed))
        }
    }

    /// One client id and request id under both spellings: two requests, two executions; neither
    /// principal is answered with the other's stored reply.
    @Test func theDedupeWindowKeepsTheSpellingsApart() async throws {
        try await withServer { _, address in
            let nfc = try await loggedIn(address, as: Self.composed, clientID: "shared")
            let nfd = try await loggedIn(address, as: Self.decomposed, clientID: "shared")
            let first = try await nfc.call("count", id: "r1")
            let second = try await nfd.call("count", id: "r1")
            #expect(first.text == "execution 1" && second.text == "execution 2")
        }
    }
}
