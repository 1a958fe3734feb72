import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Synchronization
import Testing

@testable import LongLink

/// A user switch is a clean slate: after a logout, a kick or a rejected login, nothing of the old
/// user's push state, calls, cache or subscriptions shapes what the next user gets. Each test
/// runs the real server on loopback.
@Suite("A user switch is a clean slate", .sharedMachine)
struct CleanSlateTests {
    private static func step(_ user: String) -> @Sendable (LoginSession) async throws -> Void {
        { session in _ = try await session.request("login", payload: bytes(user)) }
    }

    /// A client that logs in as `user`, waits for a login after a session ends, and whose push
    /// consumers fall behind after 4 pushes.
    private static func client(_ endpoint: Endpoint, as user: String) -> RunningClient {
        var configuration = ClientConfiguration.forTests(endpoint)
        configuration.login = step(user)
        configuration.waitsForLoginAfterSessionEnd = true
        configuration.pushBufferLimit = 4
        return RunningClient(configuration)
    }

    private static func waitForLogin(_ client: LongLinkClient, _ code: LongLinkError.Code) async throws {
        let states = client.connectionStates
        try await within(.seconds(20), "the wait for a login") {
            for await state in states
            where state.phase == .waitingToReconnect && state.retryDelay == nil && state.error?.code == code {
                return
            }
            throw ConditionTimedOut(what: "the wait for a login (the state stream ended)")
        }
    }

    /// The payloads of the next `count` pushes of `stream`, as text, within 20 s.
    private static func payloads(_ count: Int, from stream: AsyncStream<Push>) async throws -> [String] {
        try await within(.seconds(20), "\(count) pushes to arrive") {
            var payloads: [String] = []
            var iterator = stream.makeAsyncIterator()
            while payloads.count < count, let push = await iterator.next() { payloads.append(text(push.payload)) }
            return payloads
        }
    }

    /// Alice's long-lived stream is never read, so her consumer is far behind and reliable pushes
    /// are deferred; then her session ends by `end`. Bob logs in, and every one of his reliable
    /// pushes reaches his stream.
    private static func switchWithAConsumerFarBehind(
        end: @escaping @Sendable (LongLinkClient, RunningServer) async throws -> LongLinkError.Code,
        login: (@Sendable (LoginSession) async throws -> Void)? = nil, as first: String = "alice"
    ) async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = client(server.endpoint, as: first)
        let client = running.client
        let unread = client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...20 { try await server.server.push(to: first, topic: "alerts", payload: bytes("alice \(n)")) }
        try await eventually("alice's consumer is behind") { await client.statistics.reliablePushesDeferred > 0 }
        let code = try await end(client, server)
        try await waitForLogin(client, code)
        try await client.login(step("bob"))
        let bobs = client.pushes(topic: "alerts")
        for n in 1...20 { try await server.server.push(to: "bob", topic: "alerts", payload: bytes("bob \(n)")) }
        #expect(try await payloads(20, from: bobs) == (1...20).map { "bob \($0)" })
        withExtendedLifetime(unread) {}
        _ = await running.stop()
        try await server.stop()
    }

    @Test func afterALogoutWithAConsumerFarBehindTheNextUsersPushesAllArrive() async throws {
        try await Self.switchWithAConsumerFarBehind { client, _ in
            await client.logout(reason: "switching users")
            return .unauthenticated
        }
    }

    @Test func afterAKickWithAConsumerFarBehindTheNextUsersPushesAllArrive() async throws {
        try await Self.switchWithAConsumerFarBehind { _, server in
            #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
            return .goAway
        }
    }

    /// Alice's session ends when her login is rejected on a reconnection (her token expired, say).
    @Test func afterALoginRejectedOnReconnectionWithAConsumerFarBehindTheNextUsersPushesAllArrive() async throws {
        let expired = Atomic<Bool>(false)
        let server = try await RunningServer.start(probe: Probe())
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.login = { session in
            _ = try await session.request(
                "login", payload: bytes(expired.load(ordering: .relaxed) ? "intruder" : "alice"))
        }
        configuration.waitsForLoginAfterSessionEnd = true
        configuration.pushBufferLimit = 4
        let running = RunningClient(configuration)
        let client = running.client
        let unread = client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...20 { try await server.server.push(to: "alice", topic: "alerts", payload: bytes("alice \(n)")) }
        try await eventually("alice's consumer is behind") { await client.statistics.reliablePushesDeferred > 0 }
        expired.store(true, ordering: .relaxed)
        server.server.goAwayAll(reason: "restarting", reconnect: true)
        try await Self.waitForLogin(client, .unauthenticated)
        try await client.login(Self.step("bob"))
        let bobs = client.pushes(topic: "alerts")
        for n in 1...20 { try await server.server.push(to: "bob", topic: "alerts", payload: bytes("bob \(n)")) }
        #expect(try await Self.payloads(20, from: bobs) == (1...20).map { "bob \($0)" })
        withExtendedLifetime(unread) {}
        _ = await running.stop()
        try await server.stop()
    }

    /// On a server whose store does not number in epochs (every push has epoch 0, and each
    /// principal's seqs start at 1), alice takes and acknowledges her pushes 1 to 3, her session
    /// ends by `end`, and bob logs in: his pushes 1 to 3 are delivered as his own, not taken for
    /// alice's again. `then` checks more before the client stops.
    private static func switchOnAnEpochlessServer(
        end: (LongLinkClient, RunningServer) async throws -> Void,
        then: (LongLinkClient, EpochlessPushStore) async throws -> Void = { _, _ in }
    ) async throws {
        let store = EpochlessPushStore()
        let server = try await RunningServer.start(probe: Probe(), pushStore: store)
        let running = client(server.endpoint, as: "alice")
        let client = running.client
        let alices = client.pushes(topic: "alerts")
        try await running.waitUntilConnected()
        for n in 1...3 { try await server.server.push(to: "alice", topic: "alerts", payload: bytes("alice \(n)")) }
        #expect(try await payloads(3, from: alices) == ["alice 1", "alice 2", "alice 3"])
        try await eventually("alice's pushes are acknowledged") { store.unacknowledgedCount(principal: "alice") == 0 }
        try await end(client, server)
        try await client.login(step("bob"))
        let bobs = client.pushes(topic: "alerts")
        for n in 1...3 { try await server.server.push(to: "bob", topic: "alerts", payload: bytes("bob \(n)")) }
        #expect(try await payloads(3, from: bobs) == ["bob 1", "bob 2", "bob 3"])
        try await then(client, store)
        _ = await running.stop()
        try await server.stop()
    }

    /// Alice logs out.
    @Test func withAServerSendingEpochZeroTheNextUsersSameSeqsAreDelivered() async throws {
        try await Self.switchOnAnEpochlessServer { client, _ in
            await client.logout(reason: "switching users")
        } then: { client, store in
            try await eventually("bob's pushes are acknowledged") { store.unacknowledgedCount(principal: "bob") == 0 }
            #expect(await client.statistics.duplicatePushesDropped == 0)
        }
    }

    /// Alice is kicked rather than logging out.
    @Test func withAServerSendingEpochZeroAKickedUsersSeqsDoNotHideTheNextUsers() async throws {
        try await Self.switchOnAnEpochlessServer { client, server in
            #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
            try await Self.waitForLogin(client, .goAway)
        }
    }

    /// Once alice's session ended, her cached replies are gone at once: a cache-only read made
    /// before anyone logs in again (a login screen, say) finds nothing of hers.
    @Test func theOldUsersCacheIsEmptyAsSoonAsHerSessionEnds() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = Self.client(server.endpoint, as: "alice")
        let client = running.client
        try await running.waitUntilConnected()
        var cached = RequestOptions()
        cached.cache = .cacheFirst(maxAge: .seconds(600))
        let enter = bytes(#"{"id":1}"#)
        #expect(text(try await client.request("room.enter", payload: enter, options: cached)).contains("alice"))
        #expect(client.cache.count == 1)
        await client.logout(reason: "switching users")
        #expect(client.cache.count == 0)
        var cacheOnly = RequestOptions()
        cacheOnly.cache = .cacheOnly()
        do {
            let leaked = try await client.request("room.enter", payload: enter, options: cacheOnly)
            Issue.record("a read between sessions found alice's reply: \(text(leaked))")
        } catch let error as LongLinkError {
            #expect(error.code == .notFound)
        }
        _ = await running.stop()
        try await server.stop()
    }

    /// A call, a push stream and a subscription the app made as alice that reach the core only
    /// after bob logged in (an idempotent call sent again after `UNKNOWN`, a stream registered
    /// late) are refused with alice's end: nothing made for her runs as bob.
    @Test func whatWasMadeForTheLastUserIsRefusedAfterTheNextLogin() async throws {
        let server = try await RunningServer.start(probe: Probe())
        let running = Self.client(server.endpoint, as: "alice")
        let client = running.client
        try await running.waitUntilConnected()
        let enter = bytes(#"{"id":1}"#)
        #expect(text(try await client.request("room.enter", payload: enter)).contains("alice"))
        let alices = client.core.session
        #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
        try await Self.waitForLogin(client, .goAway)
        try await client.login(Self.step("bob"))
        #expect(text(try await client.request("room.enter", payload: enter)).contains("bob"))
        let late = PendingRequest(
            id: 1, method: "room.enter", payload: enter, deadline: ContinuousClock.now.advanced(by: .seconds(20)),
            idempotent: true, session: alices)
        do {
            let reply = try await client.core.perform(late)
            Issue.record("alice's call ran as bob: \(text(reply))")
        } catch let error as LongLinkError {
            #expect(error.code == .goAway)
        }
        let stream = PushSubscriber(id: 999, filter: .all, limit: 10) { _ in }
        await client.core.addSubscriber(stream, session: alices)
        #expect(stream.isFinished)
        #expect(stream.endReason?.code == .goAway)
        _ = await running.stop()
        try await server.stop()
    }

    /// Alice's coalesced call ends with her session; bob's call of the same key starts a shared
    /// request of its own, answered as bob.
    @Test func theLastUsersCoalescedCallsEndWithHerSession() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let running = Self.client(server.endpoint, as: "alice")
        let client = running.client
        try await running.waitUntilConnected()
        var shared = RequestOptions()
        shared.coalesces = true
        shared.cacheKey = "room"
        let alices = Task { try await client.request("gated", options: shared) }
        try await eventually("alice's call is shared") { client.coalescer.usage.callers == 1 }
        #expect(server.server.kick(principal: "alice", reason: "logged in elsewhere") == 1)
        do {
            _ = try await within(.seconds(20), "alice's call to end") { try await alices.value }
            Issue.record("alice's shared call was answered after her session ended")
        } catch let error as LongLinkError {
            #expect(error.code == .goAway)
        }
        #expect(client.coalescer.usage == (0, 0, 0))
        probe.gate.put(())
        try await Self.waitForLogin(client, .goAway)
        try await client.login(Self.step("bob"))
        let bobs = try await client.request("room.enter", payload: bytes(#"{"id":1}"#), options: shared)
        #expect(text(bobs).contains("bob"))
        #expect(client.coalescer.counts.started == 2)
        _ = await running.stop()
        try await server.stop()
    }
}
