import LongLinkCore
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// What a server writes to a push store that shares presence, and how it answers from it: its
/// own sessions from its registry, the others' from the store; a crash writes nothing more, a
/// graceful shutdown writes its sessions' ends.
@Suite("Presence on a store that shares it", .sharedMachine)
struct SharedPresenceTests {
    /// Records every presence update and answers with the sessions it was told of at the start
    /// (another server's, and a stale one under this server's id); it never applies the updates,
    /// so that the server's answer for its own sessions can only come from its registry.
    final class SharingStore: PushStore {
        let base = InMemoryPushStore()
        let updates = Locked<[PresenceUpdate]>([])
        let known: [Presence.Session]
        /// How long each write takes, as a round trip to a store elsewhere would.
        let latency: Duration

        init(known: [Presence.Session], latency: Duration = .zero) {
            self.known = known
            self.latency = latency
        }

        var sharesPresence: Bool { true }

        func updatePresence(_ update: PresenceUpdate) async throws(LongLinkError) {
            if latency > .zero { try? await Task.sleep(for: latency) }
            updates.withLock { $0.append(update) }
        }

        func presence(of principal: String) async throws(LongLinkError) -> Presence? {
            Presence(principal: principal, count: known.count, sessions: known)
        }

        func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush { try base.append(push) }
        func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] { base.unacknowledged(read) }
        func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) { base.acknowledge(acks) }

        /// Whether any update so far named connection `id` present (or, with `absent`, ended).
        func wrote(_ id: UInt64, absent: Bool = false) -> Bool {
            updates.withLock { $0.contains { (absent ? $0.absent : $0.present).contains { $0.connectionID == id } } }
        }
    }

    private func withServer(
        _ store: SharingStore, lease: Duration = .seconds(30),
        _ body: (LongLinkServer, SocketAddress, Mailbox<SessionEvent>) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration.testing
        configuration.presenceLease = lease
        let server = LongLinkServer(
            configuration: configuration, router: Probe().router(), stores: ServerStores(pushes: store))
        let events = Mailbox<SessionEvent>()
        let stream = server.sessionEvents()
        let reader = Task { for await event in stream { events.put(event) } }
        defer { reader.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            try await body(server, try await server.localAddress, events)
            try await group.waitForAll()
        }
    }

    @Test func ownSessionsComeFromTheRegistryAndTheirEndsAreWrittenAtAGracefulShutdown() async throws {
        let id = ServerConfiguration.testing.serverID
        // Another server's session, and a stale one of this server's id (a run that crashed).
        let store = SharingStore(
            known: [
                Presence.Session(serverID: "far", connectionID: 7),
                Presence.Session(serverID: id, connectionID: 999_999),
            ], latency: .milliseconds(50))
        var began: [UInt64] = []
        try await withServer(store) { server, address, events in
            let first = try await FrameClient.loggedIn(address, clientID: "phone", as: "eve")
            let second = try await FrameClient.loggedIn(address, clientID: "laptop", as: "eve")
            for _ in 0..<2 { began.append(try await events.next(within: .seconds(10)).connectionID) }
            // At once, though the store has applied none of this server's writes.
            var presence = try await server.presence(of: "eve")
            #expect(presence.count == 3)
            let expected =
                [Presence.Session(serverID: "far", connectionID: 7)]
                + began.map {
                    Presence.Session(serverID: id, connectionID: $0)
                }
            #expect(Set(presence.sessions) == Set(expected))
            try await eventually("both sessions written", within: .seconds(10)) {
                store.wrote(began[0]) && store.wrote(began[1])
            }
            #expect(store.updates.withLock { $0.allSatisfy { $0.serverID == id && $0.lease == .seconds(30) } })

            first.close()
            let ended = try await events.next(within: .seconds(10), "the phone's session to end")
            presence = try await server.presence(of: "eve")
            #expect(presence.count == 2)
            try await eventually("the phone's end written", within: .seconds(10)) {
                store.wrote(ended.connectionID, absent: true)
            }
            _ = second
            #expect(began.filter { store.wrote($0, absent: true) } == [ended.connectionID])
            server.shutdown()
        }
        // The graceful shutdown wrote the laptop's end before the server's run() returned.
        #expect(began.allSatisfy { store.wrote($0, absent: true) })
    }

    @Test func sessionsAreRenewedEveryThirdOfTheLeaseAndACrashWritesNoEnd() async throws {
        let store = SharingStore(known: [])
        try await withServer(store, lease: .milliseconds(90)) { server, address, events in
            let client = try await FrameClient.loggedIn(address, clientID: "phone", as: "fay")
            let session = try await events.next(within: .seconds(10)).connectionID
            // The login's write, then renewals every 30 ms.
            try await eventually("three renewals", within: .seconds(10)) {
                store.updates.withLock { updates in
                    updates.filter { $0.present.map(\.connectionID).contains(session) }.count >= 4
                }
            }
            server.abort()
            _ = client
        }
        #expect(store.updates.withLock { $0.allSatisfy(\.absent.isEmpty) })
    }
}
