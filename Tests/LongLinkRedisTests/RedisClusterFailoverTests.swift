import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// A principal's primary killed while its replica lags, with each durability setting. The lag is
/// real: the replica is stopped (SIGSTOP) and the primary, whose replica output buffer is limited
/// to 1 MB, drops its link after a burst of writes, so the writes after it never reach the replica
/// that later takes over.
@Suite(
    .sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled),
    .timeLimit(.minutes(10)))
struct RedisClusterFailoverTests {
    typealias Subscriber = RedisClusterFleetTests.Subscriber

    /// The shard serving `principal`'s slot, with its primary and first replica as processes.
    struct Shard {
        let slot: Int
        let primary: RedisServerProcess
        let replica: RedisServerProcess
        let replicaID: String
    }

    static func shard(of principal: String, in cluster: RedisClusterProcess) async throws -> Shard {
        let slot = ClusterSlot.of(Array(RedisKeys(prefix: "").tag(principal: principal).utf8))
        // A node may list a new replica in its shard a moment after the cluster says it is ok.
        let shard = try await retrying("the shard of slot \(slot) with its replica") {
            () throws -> ClusterTopology.Shard in
            let map = RedisClusterClient(seeds: cluster.seeds)
            defer { Task { await map.shutdown() } }
            let topology = try await map.refreshTopology()
            let shard = topology.shards.first { $0.primary.address == topology.primary(forSlot: slot)?.address }
            guard let shard, !shard.replicas.isEmpty else { throw ConditionTimedOut(what: "a replica") }
            return shard
        }
        let replica = try #require(shard.replicas.first)
        return Shard(
            slot: slot, primary: try cluster.node(shard.primary.address),
            replica: try cluster.node(replica.address), replicaID: replica.id)
    }

    /// Stops `shard`'s replica and writes to its primary until the primary has dropped the
    /// replica's link: what it writes from then on, the replica never gets.
    static func cutReplicaOff(_ shard: Shard, in cluster: RedisClusterProcess, filling tag: String) async throws {
        // Everything so far is on the replica.
        #expect(try await cluster.run(RedisCommand("WAIT", "1", "5000"), on: shard.primary).int64 == 1)
        _ = try await cluster.run(
            RedisCommand("CONFIG", "SET", "client-output-buffer-limit", "replica 1mb 0 0"), on: shard.primary)
        shard.replica.pause()
        let filler = [UInt8](repeating: 0x78, count: 1 << 20)
        var written = 0
        try await eventually("the primary drops its stopped replica", within: .seconds(60)) {
            let key = Array("\(tag):filler\(written)".utf8)
            written += 1
            _ = try? await cluster.run(RedisCommand([Array("SET".utf8), key, filler]), on: shard.primary)
            let info = try? await cluster.run(RedisCommand("INFO", "replication"), on: shard.primary).string
            return info?.contains("connected_slaves:0") == true
        }
    }

    /// `body`'s value, tried again (bounded) while it throws.
    static func retrying<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        var value: T?
        try await eventually(what, within: .seconds(30)) {
            value = try? await body()
            return value != nil
        }
        return value!
    }

    /// Kills `shard`'s primary, lets its replica run again and waits until it serves the slot.
    static func failOver(_ shard: Shard, in cluster: RedisClusterProcess) async throws {
        await shard.primary.crash()
        shard.replica.resume()
        try await eventually("the replica serves slot \(shard.slot)", within: .seconds(60)) {
            let map = RedisClusterClient(seeds: cluster.seeds.filter { $0.port != shard.primary.port })
            let owner = (try? await map.refreshTopology())?.primary(forSlot: shard.slot)
            await map.shutdown()
            return owner?.id == shard.replicaID
        }
    }

    /// `.asynchronous`: pushes 4 and 5 reached the client but not the replica that takes over,
    /// which numbers the next pushes 4 and 5 again. The produce script sees the principal's log
    /// written under another primary's replication id and starts a new epoch: the client delivers
    /// them instead of taking them for the ones it has seen.
    @Test func afterALossyFailoverTheNextPushesStartANewEpoch() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 2)
            let principal = "lossy"
            let shard = try await Self.shard(of: principal, in: cluster)
            let subscriber = Subscriber(fleet, 0, as: principal)
            #expect(try await subscriber.client.request("server") == bytes("s0"))
            for number in 1...3 {
                try await RedisClusterFleetTests.publish(fleet, 1, to: principal, "\(number)")
                #expect(try await subscriber.next("push \(number)") == "\(number)")
            }
            let keys = RedisKeys(prefix: fleet.prefix)
            try await Self.cutReplicaOff(shard, in: cluster, filling: keys.tag(principal: principal))
            for number in 4...5 {
                try await RedisClusterFleetTests.publish(fleet, 1, to: principal, "\(number)")
                #expect(try await subscriber.next("push \(number)") == "\(number)")
            }
            try await Self.failOver(shard, in: cluster)
            // The replica that took over never had pushes 4 and 5.
            let seq = try await cluster.run(
                RedisCommand("HGET", keys.meta(principal: principal), "seq"), on: shard.replica)
            try #require(seq.string == "3", "the replica was not behind: \(seq)")

            for number in 6...7 {
                try await RedisClusterFleetTests.publish(fleet, 1, to: principal, "\(number)")
                #expect(try await subscriber.next("push \(number)") == "\(number)")
            }
            // Each once: the client counts a delivery as its consumer takes it. Pushes of the old
            // epoch whose acks the stopped replica missed may come again after the failover and be
            // dropped as duplicates; what must not happen is 6 and 7 taken for 4 and 5 (above).
            try await eventually("seven pushes delivered") { await subscriber.client.statistics.pushesDelivered == 7 }
            #expect(subscriber.received.count == 0)
            await subscriber.stop()
            await fleet.stop()
        }
    }

    /// `.replicated(1)`: a push the replica cannot confirm is refused to its producer, and every
    /// push acknowledged before the failover is on the replica that takes over; so is a stored
    /// reply.
    @Test func withReplicatedDurabilityAFailoverLosesNothingAcknowledged() async throws {
        try await withRedisCluster { cluster in
            var seeds = cluster.seeds
            for index in seeds.indices {
                seeds[index].durability = .replicated(1)
                // The replica's confirmation may take a while on a loaded machine: WAIT gets 3 s.
                seeds[index].commandTimeout = .seconds(6)
            }
            let pushes = try RedisPushStore(cluster: seeds)
            let dedupe = try RedisDedupeStore(cluster: seeds)
            let principal = "durable"
            let shard = try await Self.shard(of: principal, in: cluster)
            var acknowledged: [UInt64] = []
            for number in 1...3 {
                acknowledged.append(
                    try await pushes.append(PushAppend(principal: principal, topic: "t", payload: [UInt8(number)])).seq)
            }
            #expect(
                try await dedupe.begin(
                    DedupeClaimRequest(principal: principal, clientID: "c", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(
                try await dedupe.finish(
                    DedupeFinishRequest(
                        principal: principal, clientID: "c", requestID: "1", reply: [1], window: .seconds(60))))

            try await Self.cutReplicaOff(
                shard, in: cluster, filling: RedisKeys(prefix: "longlink:").tag(principal: principal))
            do throws(LongLinkError) {
                _ = try await pushes.append(PushAppend(principal: principal, topic: "t", payload: [4]))
                Issue.record("a push no replica confirmed was acknowledged")
            } catch {
                #expect(error.code == .unavailable, "\(error)")
            }
            #expect(
                try await dedupe.begin(
                    DedupeClaimRequest(principal: principal, clientID: "c", requestID: "2", runningFor: .seconds(30)))
                    == .run)
            do throws(LongLinkError) {
                _ = try await dedupe.finish(
                    DedupeFinishRequest(
                        principal: principal, clientID: "c", requestID: "2", reply: [2], window: .seconds(60)))
                Issue.record("a reply no replica confirmed was acknowledged")
            } catch {
                #expect(error.code == .unavailable, "\(error)")
            }

            try await Self.failOver(shard, in: cluster)
            // The stores' first commands may still meet the dead primary: they reload the map.
            let left = try await Self.retrying("the pushes read after the failover") {
                try await pushes.unacknowledged(PushRead(principal: principal, after: 0, limit: 10))
            }
            #expect(left.map(\.seq) == acknowledged, "\(left)")
            let outcome = try await Self.retrying("the stored reply read after the failover") {
                try await dedupe.begin(
                    DedupeClaimRequest(principal: principal, clientID: "c", requestID: "1", runningFor: .seconds(30)))
            }
            #expect(outcome == .finished([1]))
            await pushes.shutdown()
            await dedupe.shutdown()
        }
    }

    /// While no primary serves the principal's slot (its primary killed, the replica not yet
    /// promoted), a request whose deadline ends first is answered well within it, `UNAVAILABLE`
    /// (or `DEADLINE_EXCEEDED`), and never runs; one whose deadline allows waits for the store:
    /// its claim is made again until the replica serves the slot, and it runs, once.
    @Test func aSlotWithoutAPrimaryWaitsWithinTheDeadlineAndRunsOnce() async throws {
        try await withRedisCluster { cluster in
            let fleet = try await RedisFleet.start(onCluster: cluster, count: 2, slowFor: .milliseconds(10))
            let principal = "caller"
            let shard = try await Self.shard(of: principal, in: cluster)
            try await withLongLinkClient(configuration: .forRedisFleet([fleet.endpoints[0]], user: principal)) {
                client in
                #expect(try await client.request("server") == bytes("s0"))
                await shard.primary.crash()
                // 1 s: shorter than the cluster's node timeout (2 s), so the replica cannot serve in time.
                let started = ContinuousClock.now
                do {
                    _ = try await client.request(
                        "slow", payload: bytes("early"), options: RequestOptions(timeout: .seconds(1)))
                    Issue.record("a request ran while its slot had no primary")
                } catch let error as LongLinkError {
                    #expect([.unavailable, .deadlineExceeded].contains(error.code), "\(error)")
                }
                #expect(ContinuousClock.now - started < .seconds(5), "not answered within the deadline")
                let retried = try fleet.server(0).statistics.storeCallsRetried
                #expect(
                    try await client.request(
                        "slow", payload: bytes("during"), options: RequestOptions(timeout: .seconds(30)))
                        == bytes("s0"))
                #expect(try fleet.server(0).statistics.storeCallsRetried > retried, "it did not wait for the store")
            }
            // The counter's key has no hash tag: its slot may be the killed primary's too.
            let runs = try await Self.retrying("the runs counted") {
                (early: try await fleet.runs("early"), during: try await fleet.runs("during"))
            }
            #expect(runs.early == 0)
            #expect(runs.during == 1)
            await fleet.stop()
        }
    }
}
