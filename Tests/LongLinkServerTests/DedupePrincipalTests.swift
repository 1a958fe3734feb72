import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// The de-duplication window serves a stored reply only to the principal it was made for, and
/// only for the method it answered: client ids are not secrets.
@Suite("De-duplication and principals", .sharedMachine)
struct DedupePrincipalTests {
    /// A connection with `clientID`, logged in as `principal` (anonymous when nil).
    static func connect(_ address: SocketAddress, clientID: String, as principal: String?) async throws
        -> FrameClient
    {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: clientID)
        if let principal {
            #expect(
                try await client.call("login", bytes(principal), id: "login-\(UInt64.random(in: 0...UInt64.max))").text
                    == "welcome")
        }
        return client
    }

    @Test func aStoredReplyIsNotReplayedToAnotherPrincipal() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { server, address in
            let alice = try await Self.connect(address, clientID: "phone-1", as: "alice")
            #expect(try await alice.call("count", bytes("+"), id: "42").text == "execution 1+")
            alice.close()

            // Someone else with alice's client_id, logged in as bob or not at all, runs its own.
            let bob = try await Self.connect(address, clientID: "phone-1", as: "bob")
            #expect(try await bob.call("count", bytes("+"), id: "42").text == "execution 2+")
            let anonymous = try await Self.connect(address, clientID: "phone-1", as: nil)
            #expect(try await anonymous.call("count", bytes("+"), id: "42").text == "execution 3+")

            // Alice herself, back on a new connection, gets her stored reply.
            let again = try await Self.connect(address, clientID: "phone-1", as: "alice")
            #expect(try await again.call("count", bytes("+"), id: "42").text == "execution 1+")
            #expect(server.statistics.requestsReplayed == 1)
        }
    }

    @Test func anIDPresentByAnotherPrincipalDoesNotAnswerTheOwnersRequest() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let bob = try await Self.connect(address, clientID: "phone-1", as: "bob")
            #expect(try await bob.call("count", bytes("bob"), id: "43").text == "execution 1bob")
            let alice = try await Self.connect(address, clientID: "phone-1", as: "alice")
            #expect(try await alice.call("count", bytes("alice"), id: "43").text == "execution 2alice")
        }
    }

    @Test func anIDUsedForAnotherMethodIsRefused() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let alice = try await Self.connect(address, clientID: "phone-1", as: "alice")
            #expect(try await alice.call("count", id: "44").text == "execution 1")
            let reply = try await alice.call("whoami", id: "44")
            #expect(reply.status?.code == .invalidArgument)
            #expect(reply.payload.isEmpty)
            #expect(probe.executions.load(ordering: .relaxed) == 1)
        }
    }

    /// Found by the server fuzz target: a request admitted before the login bound the connection
    /// is still found in the window under the key it was admitted with, so a `Cancel` after the
    /// login stops its handler (looked up under the new principal's key, it ran on for an hour).
    @Test func aCancelAfterLoginStopsARequestAdmittedBeforeIt() async throws {
        let probe = Probe()
        try await withServer(probe: probe) { _, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "phone-1")
            try await client.send(.request(Frame.Request(requestID: "h1", method: "hang")))
            #expect(try await probe.events.next(within: .seconds(10), "the handler to start") == "started h1")
            #expect(try await client.call("login", bytes("alice"), id: "login-1").text == "welcome")
            try await client.send(.cancel(Frame.Cancel(requestID: "h1")))
            #expect(try await probe.events.next(within: .seconds(5), "the handler to be cancelled") == "cancelled h1")
            client.close()
        }
    }
}
