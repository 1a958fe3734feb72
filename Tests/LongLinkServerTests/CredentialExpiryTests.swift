import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Testing

/// Credentials with a lifetime on the server: a login sets an expiry, the session ends with the
/// "credential expired" `GoAway` when it passes, and a refresh renews it in place.
@Suite("Credential expiry on the server", .sharedMachine)
struct CredentialExpiryTests {
    /// Logs in as the payload's principal with a credential that lives 10 s; `auth.refresh`
    /// renews it for the number of seconds in its payload, or fails on "bad".
    static func router(_ probe: Probe) -> Router {
        var router = probe.router()
        router.register("login.expiring") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            context.setCredentialLifetime(.seconds(10))
            return Array("welcome".utf8)
        }
        router.registerCredentialRefresh("auth.refresh") { payload, _ in
            let text = String(decoding: payload, as: UTF8.self)
            guard let seconds = Int64(text) else {
                throw LongLinkError(code: .unauthenticated, message: "bad credential")
            }
            return .seconds(seconds)
        }
        return router
    }

    private func withExpiringServer(
        _ body: (LongLinkServer, FrameClient, ManualClock) async throws -> Void
    ) async throws {
        let clock = ManualClock()
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        let server = LongLinkServer(configuration: configuration, router: Self.router(Probe()))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            defer { server.shutdown() }
            let client = try await FrameClient.connect(to: try await server.localAddress)
            _ = try await client.handshake(clientID: "e")
            #expect(try await client.call("login.expiring", "eve", id: "l").text == "welcome")
            try await body(server, client, clock)
            server.shutdown()
            try await group.waitForAll()
        }
    }

    private func expectExpiredGoAway(_ client: FrameClient) async throws {
        guard case .goAway(let goAway) = try await client.nextFrame(within: .seconds(5)) else {
            Issue.record("expected the credential-expired GoAway")
            return
        }
        #expect(goAway.code == .unauthenticated)
        #expect(goAway.reason == "credential expired")
        #expect(goAway.reconnect, "the client logs in again with a new credential")
    }

    /// Still open one tick before the expiry (an echo answers), ended at it.
    private func expectEndsExactly(after lifetime: Duration, _ client: FrameClient, _ clock: ManualClock)
        async throws
    {
        await clock.advance(by: lifetime - .milliseconds(1))
        #expect(try await client.call("echo", "alive", id: "alive-\(clock.now)").text == "alive")
        await clock.advance(by: .milliseconds(1))
        try await expectExpiredGoAway(client)
    }

    @Test func aSessionPastItsExpiryIsEndedWithTheCredentialExpiredGoAway() async throws {
        try await withExpiringServer { server, client, clock in
            let expiries = server.credentialExpiries(of: "eve")
            #expect(expiries.count == 1)
            #expect(expiries.values.first == clock.now.advanced(by: .seconds(10)))
            try await expectEndsExactly(after: .seconds(10), client, clock)
            #expect(server.statistics.credentialExpiries == 1)
            #expect(server.credentialExpiries(of: "eve").isEmpty, "the ended session left its principal")
        }
    }

    @Test func aRefreshBeforeExpiryExtendsItInPlace() async throws {
        try await withExpiringServer { server, client, clock in
            await clock.advance(by: .seconds(8))
            let reply = try await client.call("auth.refresh", "10", id: "r1")
            #expect(reply.status == nil)
            #expect(server.credentialExpiries(of: "eve").values.first == clock.now.advanced(by: .seconds(10)))
            // The old expiry (2 s from now) passes without ending the session.
            try await expectEndsExactly(after: .seconds(10), client, clock)
        }
    }

    @Test func aRefreshThatFailsDoesNotExtendIt() async throws {
        try await withExpiringServer { server, client, clock in
            await clock.advance(by: .seconds(8))
            let before = server.credentialExpiries(of: "eve")
            let reply = try await client.call("auth.refresh", "bad", id: "r1")
            #expect(reply.status?.code == .unauthenticated)
            #expect(server.credentialExpiries(of: "eve") == before)
            try await expectEndsExactly(after: .seconds(2), client, clock)
        }
    }

    /// Renewals replace the one expiry and its one timer: a flood holds nothing more.
    @Test func aFloodOfRefreshesHoldsOneExpiry() async throws {
        try await withExpiringServer { server, client, clock in
            _ = try await client.call("auth.refresh", "10", id: "r0")
            let timers = clock.scheduledCount
            for index in 1...500 {
                try await client.send(
                    .request(Frame.Request(requestID: "r\(index)", method: "auth.refresh", payload: Array("30".utf8))))
            }
            #expect(try await client.call("auth.refresh", "30", id: "last").status == nil)
            try await eventually("the refreshes to be answered") { server.statistics.handlersRunning == 0 }
            #expect(clock.scheduledCount == timers)
            #expect(server.credentialExpiries(of: "eve").values.first == clock.now.advanced(by: .seconds(30)))
            try await expectEndsExactly(after: .seconds(30), client, clock)
        }
    }

    @Test func aRefreshWithoutALoginIsRefused() async throws {
        try await withExpiringServer { server, client, clock in
            let anonymous = try await FrameClient.connect(to: try await server.localAddress)
            _ = try await anonymous.handshake(clientID: "a")
            #expect(try await anonymous.call("auth.refresh", "10", id: "r").status?.code == .unauthenticated)
            await clock.advance(by: .seconds(10))
            try await expectExpiredGoAway(client)
        }
    }
}
