import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLink

/// Logging in again on the same client after a session ended for good: a kick, a rejected login,
/// a logout.
@Suite("Login again after a session ends", .sharedMachine)
struct ReloginTests {
    private static func step(_ user: String) -> @Sendable (LoginSession) async throws -> Void {
        { session in _ = try await session.request("login", payload: bytes(user)) }
    }

    private static func configuration(_ endpoint: Endpoint, as user: String) -> ClientConfiguration {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = step(user)
        configuration.waitsForLoginAfterSessionEnd = true
        return configuration
    }

    /// A server, and a client that logs in as `user` and waits for a login after a session ends.
    private static func start(as user: String) async throws -> (Probe, RunningServer, RunningClient) {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        return (probe, server, RunningClient(configuration(server.endpoint, as: user)))
    }

    /// Stops the client, whose run() returns without an error, then the server.
    private static func stopCleanly(_ running: RunningClient, _ server: RunningServer) async throws {
        let ended = await running.stop()
        #expect(throws: Never.self) { try ended.get() }
        try await server.stop()
    }

    /// The room the server says `room.enter` put the caller in: its member is the caller's principal.
    private static let enter = bytes(#"{"id":1}"#)

    /// Waits for a state of `client` that `matches`.
    private static func waitForState(
        _ client: LongLinkClient, _ what: String, _ matches: @escaping @Sendable (ConnectionState) -> Bool
    ) async throws {
        let states = client.connectionStates
        try await within(.seconds(20), what) {
            for await state in states where matches(state) { return }
            throw ConditionTimedOut(what: "\(what) (the state stream ended)")
        }
    }

    private static func waitingForLogin(_ code: LongLinkError.Code) -> @Sendable (ConnectionState) -> Bool {
        { $0.phase == .waitingToReconnect && $0.retryDelay == nil && $0.error?.code == code }
    }

    /// The error a throwing push stream ended with.
    private static func end(of sequence: PushSequence<Push>) async throws -> LongLinkError? {
        try await within(.seconds(20), "the push stream to end") {
            do throws(LongLinkError) {
                for try await _ in sequence {}
                return nil
            } catch {
                return error
            }
        }
    }

    private static func first(of pushes: AsyncStream<Push>) async throws -> String? {
        try await within(.seconds(20), "a push") {
            for await push in pushes { return text(push.payload) }
            return nil
        }
    }

    /// The machine's side: a session that ended for good admits requests and links again only once
    /// reopened, and never while the client shuts down.
    @Test func theMachineReopensAfterASessionEndButNotWhileShuttingDown() {
        var machine = LinkStateMachine()
        let nothingEnded = machine.reopen()
        #expect(!nothingEnded)
        let kicked = machine.terminate(LongLinkError(code: .goAway, message: "kicked"))
        #expect(kicked)
        #expect(machine.admissionError?.code == .goAway)
        let reopened = machine.reopen()
        #expect(reopened)
        #expect(machine.admissionError == nil)
        guard case .awaitWelcome = machine.attach(1) else {
            Issue.record("a reopened machine refused a link")
            return
        }
        let rejected = machine.terminate(LongLinkError(code: .unauthenticated, message: "rejected"))
        #expect(rejected)
        _ = machine.beginShutdown()
        let reopenedWhileShuttingDown = machine.reopen()
        #expect(!reopenedWhileShuttingDown)
        #expect(machine.admissionError?.code == .unauthenticated)
    }

    @Test func aKickedClientLogsInAsAnotherUserUnderTheSameRun() async throws {
        let (probe, server, running) = try await Self.start(as: "alice")
        let client = running.client
        let alicePushes = client.throwingPushes(topic: "alerts")
        try await running.waitUntilConnected()
        #expect(try await probe.events.next() == "login alice")
        let inFlight = Task { try await client.request("gated") }
        #expect(try await probe.events.next() == "started gated")
        #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
        // The old session's stream and call end with the kick.
        let end = try await Self.end(of: alicePushes)
        #expect(end?.code == .goAway)
        #expect(end?.message.contains("logged in elsewhere") == true)
        await #expect(throws: LongLinkError.self) { _ = try await inFlight.value }
        probe.gate.put(())
        try await Self.waitForState(client, "the wait for a login", Self.waitingForLogin(.goAway))
        // While no session runs, a call fails at once: nothing waits to run as the next user.
        do {
            _ = try await client.request("echo")
            Issue.record("a call made between sessions should fail")
        } catch let error as LongLinkError {
            #expect(error.code == .goAway)
        }
        try await client.login(Self.step("bob"))
        let bobPushes = client.pushes(topic: "alerts")
        #expect(text(try await client.request("room.enter", payload: Self.enter)).contains(#""bob""#))
        #expect(try await probe.events.next() == "login bob")
        try await server.server.push(to: "bob", topic: "alerts", payload: bytes("for bob"))
        #expect(try await Self.first(of: bobPushes) == "for bob")
        #expect(await client.statistics.connects == 2)
        // The last session did not end for good: run() returns without an error.
        try await Self.stopCleanly(running, server)
    }

    @Test func aRejectedLoginThenGoodCredentialsInWithLongLinkClient() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let reply = try await withLongLinkClient(configuration: Self.configuration(server.endpoint, as: "intruder")) {
            client in
            try await Self.waitForState(client, "the rejected login", Self.waitingForLogin(.unauthenticated))
            await #expect(throws: LongLinkError.self) { _ = try await client.request("echo") }
            try await client.login(Self.step("carol"))
            return text(try await client.request("room.enter", payload: Self.enter))
        }
        #expect(reply.contains(#""carol""#))
        #expect(try await probe.events.next() == "login carol")
        try await server.stop()
    }

    /// Alice's cached reply and the pushes held for her (no consumer took them) stay hers: the
    /// next user's calls and streams never see them, though neither login step names its principal.
    @Test func theOldUsersCachedRepliesAndHeldPushesDoNotReachTheNext() async throws {
        let (_, server, running) = try await Self.start(as: "alice")
        let client = running.client
        try await running.waitUntilConnected()
        var cached = RequestOptions()
        cached.cache = .cacheFirst(maxAge: .seconds(600))
        #expect(text(try await client.request("room.enter", payload: Self.enter, options: cached)).contains("alice"))
        for n in 0..<3 { try await server.server.push(to: "alice", topic: "alerts", payload: bytes("for alice \(n)")) }
        try await eventually("alice's pushes are held") { await client.statistics.pushesReceived == 3 }
        #expect(server.server.kick(principal: "alice", reason: "kicked") == 1)
        try await Self.waitForState(client, "the wait for a login", Self.waitingForLogin(.goAway))
        try await client.login(Self.step("bob"))
        var cacheOnly = RequestOptions()
        cacheOnly.cache = .cacheOnly()
        do {
            let leaked = try await client.request("room.enter", payload: Self.enter, options: cacheOnly)
            Issue.record("bob read alice's cached reply: \(text(leaked))")
        } catch let error as LongLinkError {
            #expect(error.code == .notFound)
        }
        #expect(text(try await client.request("room.enter", payload: Self.enter, options: cached)).contains("bob"))
        let pushes = client.pushes(topic: "alerts")
        try await server.server.push(to: "bob", topic: "alerts", payload: bytes("for bob"))
        #expect(try await Self.first(of: pushes) == "for bob")
        _ = await running.stop()
        try await server.stop()
    }

    /// Alice's run-time subscription ends with her session: its handle's replays end, and bob's
    /// login replays nothing of hers (a room entered as alice is not entered as bob).
    @Test func theOldUsersRunTimeSubscriptionsEndWithHerSession() async throws {
        let (probe, server, running) = try await Self.start(as: "alice")
        let client = running.client
        try await running.waitUntilConnected()
        #expect(try await probe.events.next() == "login alice")
        let room = try await client.subscribe(method: "record", payload: bytes("alice's room"))
        #expect(try await probe.events.next() == "record alice's room")
        #expect(server.server.kick(principal: "alice", reason: "kicked") == 1)
        try await within(.seconds(20), "the handle's replays to end") { for await _ in room.replays {} }
        try await Self.waitForState(client, "the wait for a login", Self.waitingForLogin(.goAway))
        try await client.login(Self.step("bob"))
        #expect(try await probe.events.next() == "login bob")
        // Sent after bob's login: a replay of alice's room would have come first.
        #expect(try await client.request("record", payload: bytes("marker")) == bytes("marker"))
        #expect(try await probe.events.next() == "record marker")
        _ = await running.stop()
        try await server.stop()
    }

    /// A server that kicks at every login, and an app that logs in again at every kick: each
    /// session waits for the backoff, growing, and nothing connects before it passes; a session
    /// after the app's own logout does not wait.
    @Test func aServerThatKicksAtEveryLoginIsMetWithTheBackoff() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let clock = ManualClock()
        var configuration = Self.configuration(server.endpoint, as: "dave")
        configuration.clock = clock
        configuration.backoff = Backoff(initial: .seconds(10), maximum: .seconds(80), jitter: false)
        let running = RunningClient(configuration)
        let client = running.client
        for round in 0..<3 {
            try await running.waitUntilConnected()
            #expect(await client.statistics.connects == round + 1)
            #expect(server.server.kick(principal: "dave", reason: "go away") == 1)
            try await Self.waitForState(client, "the wait for a login", Self.waitingForLogin(.goAway))
            let timers = clock.scheduledCount
            try await client.login(Self.step("dave"))
            let delay = Duration.seconds(10 << round)
            try await Self.waitForState(client, "the backoff before the session") { $0.retryDelay == delay }
            try await eventually("the backoff's timer") { clock.scheduledCount > timers }
            // The clock has not moved: the next session has not begun.
            #expect(await client.statistics.connects == round + 1)
            await clock.advance(by: delay)
        }
        try await running.waitUntilConnected()
        // A logout is the app's own choice: the next session begins at once, the clock unmoved.
        await client.logout(reason: "switching users")
        try await client.login(Self.step("dave"))
        try await eventually("the session after the logout") { await client.statistics.connects == 5 }
        _ = await running.stop()
        try await server.stop()
    }

    @Test func loginIsRefusedWhileASessionRunsAndFollowsALogout() async throws {
        let (_, server, running) = try await Self.start(as: "erin")
        let client = running.client
        let pushes = client.throwingPushes()
        try await running.waitUntilConnected()
        do {
            try await within(.seconds(20), "the login to be refused") { try await client.login(Self.step("frank")) }
            Issue.record("a login replaced a running session")
        } catch let error as LongLinkError {
            #expect(error.code == .failedPrecondition)
        }
        #expect(text(try await client.request("room.enter", payload: Self.enter)).contains("erin"))
        await client.logout(reason: "switching users")
        let end = try await Self.end(of: pushes)
        #expect(end?.code == .unauthenticated)
        #expect(end?.message == "switching users")
        try await client.login(Self.step("frank"))
        #expect(text(try await client.request("room.enter", payload: Self.enter)).contains("frank"))
        // A logout the app asked for is not an error of run().
        await client.logout()
        try await Self.stopCleanly(running, server)
    }

    @Test func withoutTheOptionAKickStillStopsRunAndLoginIsRefused() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        var configuration = Self.configuration(server.endpoint, as: "gus")
        configuration.waitsForLoginAfterSessionEnd = false
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        #expect(server.server.kick(principal: "gus", reason: "bye") == 1)
        let ended = try await running.runEnded()
        #expect(throws: LongLinkError.self) { try ended.get() }
        do {
            try await running.client.login(Self.step("gus"))
            Issue.record("login without the option")
        } catch let error as LongLinkError {
            #expect(error.code == .failedPrecondition)
        }
        try await server.stop()
    }
}
