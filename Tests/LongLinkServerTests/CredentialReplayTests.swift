import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

/// A login that set a credential lifetime, answered again from the de-duplication window (its
/// reply was lost and the client resent it under the same id on a new connection): the copy's
/// session expires when the original's did, not a lifetime after the copy, and not never.
@Suite("Credential expiry of a replayed login", .sharedMachine)
struct CredentialReplayTests {
    @Test func aReplayedLoginExpiresAtTheOriginalExpiry() async throws {
        let clock = ManualClock()
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        let server = LongLinkServer(configuration: configuration, router: CredentialExpiryTests.router(Probe()))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.shutdown() }
            let address = try await server.localAddress
            // Logged in already, the client logs in again (a new credential): on a bound connection
            // the login is de-duplicated like any request, and sets the 10 s lifetime.
            let first = try await FrameClient.connect(to: address)
            _ = try await first.handshake(clientID: "phone")
            #expect(try await first.call("login.expiring", "eve", id: "first").text == "welcome")
            let original = clock.now.advanced(by: .seconds(10))
            #expect(try await first.call("login.expiring", "eve", id: "again").text == "welcome")
            #expect(server.credentialExpiries(of: "eve").values.first == original)
            // The reply counts as lost: the link goes, and the client comes back 4 s later.
            first.close()
            try await eventually("the first connection to leave") { server.credentialExpiries(of: "eve").isEmpty }
            await clock.advance(by: .seconds(4))
            let second = try await FrameClient.connect(to: address)
            _ = try await second.handshake(clientID: "phone")
            // Its own login runs (a connection no login bound is not de-duplicated): 10 s from now.
            #expect(try await second.call("login.expiring", "eve", id: "second").text == "welcome")
            #expect(server.credentialExpiries(of: "eve").values.first == clock.now.advanced(by: .seconds(10)))
            // The lost login, resent under its id, is answered from the window...
            var copy = Frame.Request(requestID: "again", method: "login.expiring", payload: Array("eve".utf8))
            copy.resent = true
            try await second.send(.request(copy))
            #expect(try await second.response().text == "welcome")
            #expect(server.statistics.requestsReplayed == 1)
            // ...and the session's expiry is the one that login set (set before the reply went out).
            #expect(server.credentialExpiries(of: "eve").values.first == original)
            await clock.advance(by: .seconds(6) - .milliseconds(1))
            #expect(try await second.call("echo", "alive", id: "alive").text == "alive")
            await clock.advance(by: .milliseconds(1))
            guard case .goAway(let goAway) = try await second.nextFrame(within: .seconds(5)) else {
                Issue.record("expected the credential-expired GoAway at the original expiry")
                return
            }
            #expect(goAway.code == .unauthenticated && goAway.reason == "credential expired")
            server.shutdown()
            try await group.waitForAll()
        }
    }
}
