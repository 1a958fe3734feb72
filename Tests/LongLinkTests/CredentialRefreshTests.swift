import LongLinkServer
import LongLinkTestSupport
import Synchronization
import Testing

@testable import LongLink

/// Credentials with a lifetime, end to end: the client refreshes on the live link, and the races
/// (an expiry, a provider that fails or hangs, a refresh that times out, an expired static
/// credential) against a real server.
@Suite("Credential refresh end to end", .sharedMachine)
struct CredentialRefreshTests {
    /// Tokens the server saw, shared with its handlers.
    final class Tokens: Sendable {
        private let tokens = Mutex<[String]>([])
        func append(_ token: String) { tokens.withLock { $0.append(token) } }
        var all: [String] { tokens.withLock { $0 } }
        var count: Int { all.count }
    }

    /// A server whose login and refresh take a token `name:milliseconds` and give the session that
    /// lifetime; a refresh token named `slow…` is answered only after 10 s.
    final class CredentialServer: Sendable {
        let logins = Tokens()
        let refreshes = Tokens()
        let server: LongLinkServer
        let task: Task<Void, any Error>
        let endpoint: Endpoint

        static func lifetime(_ token: String) -> Duration {
            .milliseconds(Int64(token.split(separator: ":").last ?? "") ?? 0)
        }

        init() async throws {
            let logins = self.logins
            let refreshes = self.refreshes
            var router = Router()
            router.register("echo") { payload, _ in payload }
            router.register("login") { payload, context in
                let token = String(decoding: payload, as: UTF8.self)
                logins.append(token)
                context.bind(principal: "eve")
                context.setCredentialLifetime(Self.lifetime(token))
                return []
            }
            router.registerCredentialRefresh("auth.refresh") { payload, _ in
                let token = String(decoding: payload, as: UTF8.self)
                if token.hasPrefix("slow") { try await Task.sleep(for: .seconds(10)) }
                refreshes.append(token)
                return Self.lifetime(token)
            }
            var configuration = ServerConfiguration.testing
            configuration.endpoint = .tcp(host: "127.0.0.1", port: 0)
            let server = LongLinkServer(configuration: configuration, router: router)
            self.server = server
            task = Task { try await server.run() }
            let address = try await server.localAddress
            endpoint = .tcp(host: "127.0.0.1", port: address.port ?? 0)
        }

        func stop() async throws {
            server.shutdown()
            try await task.value
        }
    }

    /// Holds two provider calls until the test lets each go.
    final class Holds: Sendable {
        let count = Atomic<Int>(0)
        let held = Mailbox<Int>()
        let gates = [Mailbox<Void>(), Mailbox<Void>()]

        func hold() async throws {
            let n = count.add(1, ordering: .relaxed).newValue
            guard n <= gates.count else { return }
            held.put(n)
            _ = try await gates[n - 1].next(within: .seconds(20), "the test to let refresh \(n) go")
        }
    }

    /// The first credential's expiry, once the provider handed it out.
    final class FirstExpiry: Sendable {
        private let expiry = Mutex<ContinuousClock.Instant?>(nil)
        func set(_ instant: ContinuousClock.Instant?) { expiry.withLock { if $0 == nil { $0 = instant } } }
        /// Before the first credential's expiry.
        var notYet: Bool { expiry.withLock { $0.map { .now < $0 } ?? false } }
    }

    /// The app's provider: numbered tokens of `lifetime`, with what each call should do.
    final class Provider: Sendable {
        enum Mode: Sendable {
            case ok
            case fail
            case hang
            case slow
            /// Wait for the test (``Holds``).
            case hold
        }
        let calls = Atomic<Int>(0)
        let lifetime: Duration
        /// What the call numbered n (1 is the first login's) does; `.ok` when absent.
        let modes: @Sendable (Int) -> Mode

        let holds: Holds?

        init(lifetime: Duration, holds: Holds? = nil, modes: @escaping @Sendable (Int) -> Mode = { _ in .ok }) {
            self.lifetime = lifetime
            self.holds = holds
            self.modes = modes
        }

        func credential() async throws -> Credential {
            let n = calls.add(1, ordering: .relaxed).newValue
            let ms = lifetime.components.seconds * 1_000 + lifetime.components.attoseconds / 1_000_000_000_000_000
            switch modes(n) {
            case .ok: break
            case .fail: throw LongLinkError(code: .unavailable, message: "the token service is down")
            case .hang: try await Task.sleep(for: .seconds(60))
            case .hold: try await holds?.hold()
            case .slow: return Credential(token: "slow\(n):\(ms)", expiresAt: .now.advanced(by: lifetime))
            }
            return Credential(token: "t\(n):\(ms)", expiresAt: .now.advanced(by: lifetime))
        }
    }

    static func configuration(
        _ endpoint: Endpoint, lead: Duration, provider: @escaping @Sendable () async throws -> Credential
    ) -> ClientConfiguration {
        var configuration = ClientConfiguration.forTests(endpoint)
        var credentials = CredentialRefresh(method: "auth.refresh", provider: provider)
        credentials.lead = lead
        credentials.jitter = 0
        credentials.timeout = .milliseconds(300)
        credentials.backoff = Backoff(initial: .milliseconds(50), maximum: .milliseconds(200))
        configuration.credentials = credentials
        configuration.login = { session in
            let credential = try await session.credential()
            _ = try await session.request("login", payload: Array(credential.token.utf8))
        }
        return configuration
    }

    private func echo(_ client: LongLinkClient, _ text: String) async throws {
        #expect(try await client.request("echo", payload: Array(text.utf8)) == Array(text.utf8))
    }

    @Test func aRefreshRenewsTheSessionOnTheLiveLink() async throws {
        let server = try await CredentialServer()
        let provider = Provider(lifetime: .milliseconds(1_500))
        let running = RunningClient(
            Self.configuration(server.endpoint, lead: .milliseconds(1_000), provider: provider.credential))
        try await running.waitUntilConnected()
        try await eventually("three refreshes") { server.refreshes.count >= 3 }
        try await echo(running.client, "still here")
        #expect(server.server.statistics.acceptedConnections == 1, "renewed in place, never reconnected")
        #expect(server.server.statistics.credentialExpiries == 0)
        #expect(server.logins.count == 1)
        _ = await running.stop()
        try await server.stop()
    }

    /// Refreshes fail until the credential expires: the link ends at the expiry and the client
    /// logs in again with a new credential from the provider (never the expired one), while a
    /// request loop goes on and loses nothing.
    @Test func anExpiryLogsInAgainThroughTheProviderNeverWithTheExpiredCredential() async throws {
        let server = try await CredentialServer()
        let firstExpiry = FirstExpiry()
        let provider = Provider(lifetime: .milliseconds(800)) { n in
            n == 1 ? .ok : (firstExpiry.notYet ? .fail : .ok)
        }
        let running = RunningClient(
            Self.configuration(server.endpoint, lead: .milliseconds(600)) {
                let credential = try await provider.credential()
                firstExpiry.set(credential.expiresAt)
                return credential
            })
        let states = running.client.connectionStates
        let sawExpiry = Task {
            for await state in states
            where state.phase == .waitingToReconnect && state.error?.code == .unauthenticated
                && state.error?.message == "credential expired"
            {
                return true
            }
            return false
        }
        try await running.waitUntilConnected()
        var sent = 0
        let deadline = ContinuousClock.now.advanced(by: .seconds(20))
        while server.logins.count < 2, ContinuousClock.now < deadline {
            sent += 1
            try await echo(running.client, "loop \(sent)")
            try await Task.sleep(for: .milliseconds(50))
        }
        try await echo(running.client, "after")
        let logins = server.logins.all
        #expect(logins.count == 2)
        #expect(Set(logins).count == logins.count, "every login presented a new credential")
        // No refresh of the first session got through: any the server took came from a credential
        // made after the second login's (the new session refreshes on its own schedule, and on a
        // loaded machine it may have before the loop above saw the second login).
        func call(_ token: String) -> Int { Int(token.dropFirst().prefix { $0 != ":" }) ?? 0 }
        let secondLogin = logins.count == 2 ? call(logins[1]) : Int.max
        #expect(server.refreshes.all.allSatisfy { call($0) > secondLogin }, "every refresh of the first session failed")
        #expect(provider.calls.load(ordering: .relaxed) > 2, "refreshes were tried before the expiry")
        // The states end with run(): a task that found none returns then.
        _ = await running.stop()
        #expect(await sawExpiry.value, "the app sees why the link ended")
        try await server.stop()
    }

    /// The race of a refresh outstanding when the link changes: the provider holds server A's
    /// first refresh while A says `GoAway`, the client moves to B and logs in there, and B's
    /// first refresh is held too; then A's refresh comes back (for a link that is gone) while B's
    /// is under way. What it comes to belongs to the old link: B's chain goes on alone, refreshing
    /// once per interval rather than twice.
    @Test func aRefreshOutstandingWhenTheClientMovesStartsNoSecondChain() async throws {
        let holds = Holds()
        let servers = [try await CredentialServer(), try await CredentialServer()]
        // Calls: 1 the login on A, 2 A's refresh (held), 3 the login on B, 4 B's refresh (held).
        // A refresh every second (a 5 s credential, a 4 s lead): B's held refresh has 4 s before B's
        // credential expires, so a loaded machine's slow release cannot turn the race into an expiry.
        let provider = Provider(lifetime: .seconds(5), holds: holds) { n in n == 2 || n == 4 ? .hold : .ok }
        var configuration = Self.configuration(
            servers[0].endpoint, lead: .seconds(4), provider: provider.credential)
        configuration.endpoints = servers.map(\.endpoint)
        configuration.credentials?.timeout = .seconds(10)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        #expect(try await holds.held.next(within: .seconds(10), "A's refresh") == 1)
        guard let first = servers.firstIndex(where: { $0.logins.count == 1 }) else {
            Issue.record("no server saw the login")
            return
        }
        let other = servers[1 - first]
        servers[first].server.goAwayAll(reason: "draining", reconnect: true)
        #expect(try await holds.held.next(within: .seconds(10), "B's refresh") == 2)
        #expect(other.logins.count == 1, "the second refresh is the new link's")
        holds.gates[0].put(())
        try await Task.sleep(for: .milliseconds(200))
        holds.gates[1].put(())
        try await eventually("the new link's first refresh") { other.refreshes.count == 1 }
        // One chain refreshes once a second: 3 s hold at most 4 (two chains would make 6 or more).
        try await Task.sleep(for: .seconds(3))
        #expect(other.refreshes.count <= 4, "\(other.refreshes.count) refreshes in 3 s: more than one chain")
        #expect(other.refreshes.count >= 2, "the chain goes on")
        #expect(servers[first].refreshes.count == 0, "A's refresh never reached a link")
        _ = await running.stop()
        for server in servers { try await server.stop() }
    }

    /// The provider hangs, then fails: each attempt ends at the timeout, the link stays, and the
    /// refresh that finally works renews the session in place.
    @Test func aProviderThatHangsOrFailsIsBoundedAndTheLinkStays() async throws {
        let server = try await CredentialServer()
        let provider = Provider(lifetime: .seconds(4)) { n in
            switch n {
            case 2, 3: .hang
            case 4: .fail
            default: .ok
            }
        }
        let running = RunningClient(
            Self.configuration(server.endpoint, lead: .milliseconds(3_700), provider: provider.credential))
        try await running.waitUntilConnected()
        try await eventually("a refresh after the failures") { server.refreshes.count >= 1 }
        #expect(server.refreshes.all.first == "t5:4000")
        try await echo(running.client, "still here")
        #expect(server.server.statistics.acceptedConnections == 1, "the link stayed")
        _ = await running.stop()
        try await server.stop()
    }

    @Test func aRefreshThatTimesOutKeepsTheLink() async throws {
        let server = try await CredentialServer()
        let provider = Provider(lifetime: .seconds(4)) { n in n == 2 ? .slow : .ok }
        let running = RunningClient(
            Self.configuration(server.endpoint, lead: .milliseconds(3_700), provider: provider.credential))
        try await running.waitUntilConnected()
        try await eventually("the refresh after the slow one") { server.refreshes.count >= 1 }
        #expect(server.refreshes.all.first == "t3:4000")
        try await echo(running.client, "still here")
        #expect(server.server.statistics.acceptedConnections == 1, "the link stayed")
        _ = await running.stop()
        try await server.stop()
    }

    /// A provider that always hands out the same credential: once it has expired, the client
    /// stops with a typed error instead of reconnecting with it forever.
    @Test func anExpiredStaticCredentialEndsWithATypedError() async throws {
        let server = try await CredentialServer()
        let credential = Credential(token: "static:700", expiresAt: .now.advanced(by: .milliseconds(700)))
        let running = RunningClient(
            Self.configuration(server.endpoint, lead: .milliseconds(300)) { credential })
        let pushes = running.client.throwingPushes(topic: "news")
        let ended = try await running.runEnded(within: .seconds(20))
        guard case .failure(let error) = ended else {
            Issue.record("run() returned without an error")
            return
        }
        #expect(error.code == .unauthenticated)
        #expect(error.message.contains("credential expired"))
        #expect(server.logins.all == ["static:700"], "the expired credential was never presented")
        await #expect(throws: LongLinkError.self) { for try await _ in pushes {} }
        try await server.stop()
    }
}
