import Dispatch
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// A best-effort push is for the principal it was addressed to: `pushBestEffort` picks the
/// principal's connections on the caller's thread and sends on each connection's loop, and a
/// connection bound to someone else by then must not get it.
@Suite("Best-effort pushes and re-binding", .sharedMachine)
struct BestEffortPrincipalTests {
    @Test func aConnectionReboundBeforeTheHopDoesNotGetThePreviousPrincipalsPush() async throws {
        try await withServer { server, address in
            let client = try await FrameClient.connect(to: address)
            _ = try await client.handshake(clientID: "shared-tablet")
            #expect(try await client.call("login", bytes("alice"), id: "login-alice").text == "welcome")
            guard let connection = server.core.connections(of: "alice").first else {
                Issue.record("alice's connection is not registered")
                return
            }
            // Hold the connection's loop so that what follows runs there in order, after the
            // push has picked its connections: the re-binding first, then the push's hop.
            let held = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            connection.loop.execute {
                held.signal()
                // Bounded: a test that fails before releasing must not keep the loop forever.
                _ = release.wait(timeout: .now() + .seconds(20))
            }
            #expect(held.wait(timeout: .now() + .seconds(20)) == .success)
            // One thread submits both, so the loop runs them in this order.
            connection.bind(principal: "bob")
            server.pushBestEffort(to: "alice", topic: "private", payload: bytes("for alice only"))
            release.signal()
            // The connection is bob's now: the first frame is the reply, not alice's push.
            try await client.send(.request(Frame.Request(requestID: "who", method: "whoami")))
            let frame = try await client.nextFrame()
            #expect(frame.isBobsWhoami, "bob got \(frame)")
            // Bob's own pushes still arrive.
            server.pushBestEffort(to: "bob", topic: "public", payload: bytes("for bob"))
            guard case .push(let push) = try await client.nextFrame() else {
                Issue.record("expected bob's push")
                return
            }
            #expect(push.payload == bytes("for bob"))
        }
    }
}

extension Frame {
    fileprivate var isBobsWhoami: Bool {
        if case .response(let response) = self { return response.payload == Array("bob".utf8) }
        return false
    }
}
