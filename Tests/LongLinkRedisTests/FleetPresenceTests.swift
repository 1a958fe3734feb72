import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// Presence across a fleet: every server answers for the principal's sessions on every server, on
/// one Redis and on a Redis Cluster, and the sessions of a server that crashed are reported ended
/// within the lease.
@Suite(.sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetPresenceTests {
    /// The lease of the tests: short, so that a crash's sessions leave soon; long enough that a
    /// loaded machine's renewals (every third of it) are never late by a whole lease.
    static let lease = Duration.milliseconds(4500)

    @Test func presenceHoldsAcrossTwoServersOnOneRedis() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, count: 2, presenceLease: Self.lease)
            try await Self.presenceAcrossTheFleet(fleet, principals: ("ana", "bo"))
            await fleet.stop()
        }
    }

    @Test func presenceHoldsAcrossTwoServersOnACluster() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 2, presenceLease: Self.lease)
            // Two principals in different slots: s0's renewal of both goes as one call per slot.
            let (ana, bo) = ("ana", "bo")
            let slot = { (name: String) in ClusterSlot.of(Array(RedisKeys(prefix: "").tag(principal: name).utf8)) }
            #expect(slot(ana) != slot(bo))
            try await Self.presenceAcrossTheFleet(fleet, principals: (ana, bo))
            await fleet.stop()
        }
    }

    /// A session of `principal` on s0 and one on s1, and one of `other` on s0: both servers count
    /// two for `principal` (the handler's `RequestContext` too), and the sessions outlive their
    /// lease while their servers renew them; one logs out: both count one; s0 crashes (no end
    /// written, no renewal): the crashed sessions are still listed at once, and gone within the
    /// lease.
    static func presenceAcrossTheFleet(_ fleet: RedisFleet, principals: (String, String)) async throws {
        let (principal, other) = principals
        let first = LongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: principal))
        let second = LongLinkClient(configuration: .forRedisFleet([fleet.endpoints[1]], user: principal))
        let third = LongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: other))
        let runs = [first, second, third].map { client in Task { try? await client.run() } }
        #expect(try await first.request("server") == bytes("s0"))
        #expect(try await second.request("server") == bytes("s1"))
        #expect(try await third.request("server") == bytes("s0"))

        func count(_ name: String, on index: Int) async -> Int {
            (try? await fleet.server(index).presence(of: name).count) ?? -1
        }
        try await eventually("\(principal) on two sessions, seen from both servers", within: .seconds(10)) {
            let counts = (await count(principal, on: 0), await count(principal, on: 1))
            return counts == (2, 2)
        }
        let presence = try await fleet.server(1).presence(of: principal)
        #expect(presence.isConnected)
        #expect(presence.sessions.map(\.serverID).sorted() == ["s0", "s1"])
        #expect(try await second.request("presence", payload: bytes(principal)) == bytes("2"))
        // The local answer is still each server's own share.
        #expect(try fleet.server(0).sessions(of: principal) == 1)

        // Renewed every third of the lease: still there after one and a half leases.
        try await Task.sleep(for: lease * 1.5)
        let renewed = (await count(principal, on: 1), await count(other, on: 1))
        #expect(renewed.0 == 2)
        #expect(renewed.1 == 1)

        second.shutdown()
        await runs[1].value
        try await eventually("\(principal) on one session after a logout", within: .seconds(10)) {
            let counts = (await count(principal, on: 0), await count(principal, on: 1))
            return counts == (1, 1)
        }
        #expect(try await fleet.server(1).presence(of: principal).sessions.map(\.serverID) == ["s0"])

        // s0 crashes: nothing tells the fleet its sessions ended; their lease does.
        await fleet.members[0].crash()
        let crashed = ContinuousClock.now
        let left = await count(principal, on: 1)
        #expect(left == 1, "the crash wrote no session's end")
        try await eventually("the crashed server's sessions gone", within: lease + .seconds(3)) {
            let counts = (await count(principal, on: 1), await count(other, on: 1))
            return counts == (0, 0)
        }
        #expect(ContinuousClock.now - crashed < lease + .seconds(3))
        #expect(try await fleet.server(1).presence(of: principal).isConnected == false)

        first.shutdown()
        third.shutdown()
        for run in runs { await run.value }
    }
}

/// The store's side of presence on one Redis: sessions written, renewed, removed and expired by
/// Redis's clock, and the set's key gone with its last session.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(5)))
struct RedisPresenceStoreTests {
    @Test func sessionsLastTheirLeaseUnlessRenewedAndTheSetGoesWithTheLast() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let key = RedisKeys(prefix: redis.configuration.keyPrefix).presence(principal: "cy")
            func update(_ present: [UInt64], _ absent: [UInt64] = [], lease: Duration) async throws {
                try await store.updatePresence(
                    PresenceUpdate(
                        serverID: "eu/1", instance: "k3", lease: lease,
                        present: present.map { PresenceUpdate.Session(principal: "cy", connectionID: $0) },
                        absent: absent.map { PresenceUpdate.Session(principal: "cy", connectionID: $0) }))
            }
            #expect(try await store.presence(of: "cy")?.count == 0)
            try await update([1, 2], lease: .seconds(60))
            let presence = try #require(try await store.presence(of: "cy"))
            #expect(presence.count == 2)
            // The server id may hold `/`: the instance and the connection id are read from the end.
            #expect(
                Set(presence.sessions) == [
                    .init(serverID: "eu/1", connectionID: 1), .init(serverID: "eu/1", connectionID: 2),
                ])
            try await update([], [2], lease: .seconds(60))
            #expect(try await store.presence(of: "cy")?.sessions == [.init(serverID: "eu/1", connectionID: 1)])
            let ttl = try await store.client.run(RedisCommand("PTTL", key).keyed(1..<2)).int64 ?? 0
            #expect((50_000...60_000).contains(ttl))

            // Renewed with a short lease: the session goes with it (the key keeps its longer expiry).
            try await update([1], lease: .milliseconds(300))
            try await eventually("the session's lease passed", within: .seconds(5)) {
                (try? await store.presence(of: "cy")?.count) == 0
            }
            // A set nobody reads or renews expires with its last session's lease.
            try await store.updatePresence(
                PresenceUpdate(
                    serverID: "eu", instance: "k4", lease: .milliseconds(300),
                    present: [PresenceUpdate.Session(principal: "dee", connectionID: 7)], absent: []))
            let other = RedisKeys(prefix: redis.configuration.keyPrefix).presence(principal: "dee")
            #expect(try await store.client.run(RedisCommand("EXISTS", other).keyed(1..<2)).int64 == 1)
            try await eventually("the unread set expired", within: .seconds(5)) {
                (try? await store.client.run(RedisCommand("EXISTS", other).keyed(1..<2)).int64) == 0
            }
            await store.shutdown()
        }
    }
}
