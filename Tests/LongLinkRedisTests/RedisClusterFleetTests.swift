import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// The fleet's stores on a real three-primary cluster the test starts: principals spread over
/// every primary with their notices by sharded pub/sub, a principal's slot resharded live, and a
/// primary killed with each durability setting.
@Suite(
    .sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled),
    .timeLimit(.minutes(10)))
struct RedisClusterFleetTests {
    /// A client of member `index` logged in as `principal`, its pushes on topic `t` collected.
    final class Subscriber: Sendable {
        let principal: String
        let client: LongLinkClient
        let received = Mailbox<String>()
        private let run: Task<Void, Never>
        private let reading: Task<Void, Never>

        init(_ fleet: RedisFleet, _ index: Int, as principal: String) {
            self.principal = principal
            let client = LongLinkClient(configuration: .forRedisFleet([fleet.endpoints[index]], user: principal))
            self.client = client
            self.run = Task { try? await client.run() }
            let pushes = client.pushes(topic: "t")
            let received = received
            self.reading = Task {
                for await push in pushes { received.put(String(decoding: push.payload, as: UTF8.self)) }
            }
        }

        /// The next payload delivered, within a bound.
        func next(_ what: String) async throws -> String {
            try await received.next(within: .seconds(20), "\(principal): \(what)")
        }

        func stop() async {
            client.shutdown()
            await run.value
            await reading.value
        }
    }

    /// `count` principals whose slots each primary of `topology` serves, with that primary.
    static func principals(perPrimary count: Int, in topology: ClusterTopology) -> [(String, ClusterTopology.Address)] {
        var found: [ClusterTopology.Address: [String]] = [:]
        var index = 0
        while found.values.map(\.count).reduce(0, +) < count * topology.primaries.count {
            let principal = "user-\(index)"
            index += 1
            let slot = ClusterSlot.of(Array(RedisKeys(prefix: "").tag(principal: principal).utf8))
            guard let primary = topology.primary(forSlot: slot)?.address, found[primary, default: []].count < count
            else { continue }
            found[primary, default: []].append(principal)
        }
        return found.flatMap { primary, principals in principals.map { ($0, primary) } }
    }

    /// How many connections subscribe to `channel` on `node` (`PUBSUB SHARDNUMSUB`).
    static func shardSubscribers(
        _ cluster: RedisClusterProcess, _ node: ClusterTopology.Address, _ channel: String
    ) async throws -> Int64 {
        let reply = try await cluster.run(RedisCommand("PUBSUB", "SHARDNUMSUB", channel), on: try cluster.node(node))
        return reply.elements?.last?.int64 ?? -1
    }

    /// Publishes on member `index`, retrying (bounded) while the cluster is failing over.
    static func publish(_ fleet: RedisFleet, _ index: Int, to principal: String, _ payload: String) async throws {
        try await eventually("\(payload) published for \(principal)", within: .seconds(30)) {
            (try? await fleet.server(index).push(to: principal, topic: "t", payload: bytes(payload))) != nil
        }
    }

    @Test func pushesReachAClientOnAnotherServerWhicheverPrimaryHoldsThePrincipal() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 2)
            let map = RedisClusterClient(seeds: cluster.seeds)
            let topology = try await map.refreshTopology()
            let principals = Self.principals(perPrimary: 2, in: topology)
            var subscribers: [Subscriber] = []
            for (principal, _) in principals {
                let subscriber = Subscriber(fleet, 0, as: principal)
                // Logged in on s0 (and a request through the cluster's de-dup window).
                #expect(try await subscriber.client.request("server") == bytes("s0"))
                subscribers.append(subscriber)
            }
            for subscriber in subscribers {
                try await Self.publish(fleet, 1, to: subscriber.principal, "for \(subscriber.principal)")
                #expect(try await subscriber.next("its push") == "for \(subscriber.principal)")
            }
            let keys = RedisKeys(prefix: fleet.prefix)
            for (principal, primary) in principals {
                // s0 hears the principal's notices on the primary serving its slot.
                #expect(try await Self.shardSubscribers(cluster, primary, keys.channel(principal: principal)) == 1)
            }
            for primary in topology.primaries {
                let size = try await cluster.run(RedisCommand("DBSIZE"), on: try cluster.node(primary)).int64
                #expect((size ?? 0) > 0, "no keys on \(primary)")
            }
            for subscriber in subscribers { await subscriber.stop() }
            await map.shutdown()
            await fleet.stop()
        }
    }

    /// The principal's slot moves to another primary while its client is connected: the node it
    /// left unsubscribes s0 from the channel; s0 subscribes on the new primary and reads again,
    /// so the push produced there right after the move arrives.
    @Test func aReshardedSlotKeepsItsPushesComing() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 2)
            let map = RedisClusterClient(seeds: cluster.seeds)
            let topology = try await map.refreshTopology()
            let (principal, sourceAddress) = Self.principals(perPrimary: 1, in: topology)[0]
            let source = try #require(topology.shards.first { $0.primary.address == sourceAddress })
            let target = try #require(topology.shards.first { $0.primary.address != sourceAddress })
            let subscriber = Subscriber(fleet, 0, as: principal)
            #expect(try await subscriber.client.request("server") == bytes("s0"))
            try await Self.publish(fleet, 1, to: principal, "before")
            #expect(try await subscriber.next("the push before the move") == "before")

            let slot = ClusterSlot.of(Array(RedisKeys(prefix: "").tag(principal: principal).utf8))
            try await cluster.startMigrating(slot: slot, from: source, to: target)
            try await cluster.finishMigrating(slot: slot, from: source, to: target, primaries: topology.primaries)
            // Produced at once: its notice may go out before s0 subscribed on the new primary; the
            // read that follows the subscription finds it then.
            try await Self.publish(fleet, 1, to: principal, "after")
            #expect(try await subscriber.next("the push after the move") == "after")
            let channel = RedisKeys(prefix: fleet.prefix).channel(principal: principal)
            #expect(try await Self.shardSubscribers(cluster, target.primary.address, channel) == 1)
            #expect(try await Self.shardSubscribers(cluster, source.primary.address, channel) == 0)
            try await eventually("two pushes delivered") { await subscriber.client.statistics.pushesDelivered == 2 }
            #expect(subscriber.received.count == 0)
            await subscriber.stop()
            await map.shutdown()
            await fleet.stop()
        }
    }
}
