import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisClusterClient`` against a real three-primary cluster the test starts: keys spread by
/// slot, a slot migrated live (`ASK`, then `MOVED`), a primary killed (`unavailable` until its
/// replica takes over).
@Suite(
    .sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled),
    .timeLimit(.minutes(10)))
struct RedisClusterTests {
    static let keys = RedisKeys(prefix: "longlink:")

    static func set(_ key: String, _ value: String) -> RedisCommand { RedisCommand("SET", key, value).keyed(1..<2) }
    static func get(_ key: String) -> RedisCommand { RedisCommand("GET", key).keyed(1..<2) }

    @Test func principalsSpreadOverEveryPrimary() async throws {
        try await withRedisCluster { cluster in
            let client = RedisClusterClient(seeds: [cluster.seeds[0]])
            let principals = (0..<300).map { "user-\($0)" }
            // One pipelined batch: split by node, the replies back in the caller's order.
            let replies = try await client.send(principals.map { Self.set(Self.keys.meta(principal: $0), $0) })
            #expect(replies.allSatisfy { $0.string == "OK" })
            let read = try await client.send(principals.map { Self.get(Self.keys.meta(principal: $0)) })
            #expect(read.map(\.string) == principals)
            let topology = try await client.refreshTopology()
            var counts: [Int64] = []
            for primary in topology.primaries {
                counts.append(
                    try await cluster.run(RedisCommand("DBSIZE"), on: try cluster.node(primary)).int64 ?? -1)
            }
            #expect(counts.count == 3 && counts.allSatisfy { $0 > 50 } && counts.reduce(0, +) == 300, "\(counts)")
            do throws(LongLinkError) {
                _ = try await client.run(RedisCommand("MGET", "{a}1", "{b}2").keyed(1..<3))
                Issue.record("a cross-slot command ran")
            } catch {
                #expect(error.code == .invalidArgument)
            }
            await client.shutdown()
        }
    }

    /// The same calls through ``RedisCommandRunner`` on one Redis and on a cluster: scripts by
    /// their keys' slot, each node that does not know a script running it by its source.
    static func scriptsRun(on runner: some RedisCommandRunner, principals: [String]) async throws {
        let script = RedisScript("redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])")
        for round in 0..<2 {
            let replies = try await runner.send(
                scripts: principals.map {
                    (script, [Array(keys.meta(principal: $0).utf8)], [Array("\($0)-\(round)".utf8)])
                })
            #expect(replies.map(\.string) == principals.map { "\($0)-\(round)" }, "round \(round)")
        }
        let one = try await runner.run(
            script, keys: [Array(keys.meta(principal: "x").utf8)], arguments: [Array("1".utf8)])
        #expect(one.string == "1")
        #expect(try await runner.run(get(keys.meta(principal: principals[0]))).string == "\(principals[0])-1")
    }

    @Test func scriptsRunOnOneRedisAndOnTheCluster() async throws {
        let principals = (0..<30).map { "p\($0)" }
        try await withRedisServer { redis in
            let client = RedisClient(configuration: redis.configuration)
            try await Self.scriptsRun(on: client, principals: principals)
            await client.shutdown()
        }
        try await withRedisCluster { cluster in
            let client = RedisClusterClient(seeds: cluster.seeds)
            try await Self.scriptsRun(on: client, principals: principals)
            // Sent to their slots' primaries in the first place: no redirection.
            let counts = await client.counts
            #expect(counts.moved == 0 && counts.asked == 0, "\(counts)")
            // Every primary was asked for the script and ran it by its source first.
            for primary in try await client.refreshTopology().primaries {
                let exists = try await cluster.run(
                    RedisCommand(
                        "SCRIPT", "EXISTS",
                        RedisScript("redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])").sha),
                    on: try cluster.node(primary))
                #expect(exists.elements?.first?.int64 == 1, "\(primary)")
            }
            await client.shutdown()
        }
    }

    @Test func aSlotMigratedLiveLosesNoAcknowledgedWrite() async throws {
        try await withRedisCluster { cluster in
            let client = RedisClusterClient(seeds: cluster.seeds)
            let principal = "alice"
            let slot = ClusterSlot.of(Array(Self.keys.meta(principal: principal).utf8))
            let topology = try await client.refreshTopology()
            let source = try #require(
                topology.shards.first { $0.primary.address == topology.primary(forSlot: slot)?.address })
            let target = try #require(topology.shards.first { $0.primary.id != source.primary.id })
            func key(_ index: Int) -> String { Self.keys.tag(principal: principal) + ":k\(index)" }

            // Written before the move, on the source.
            for index in 0..<20 { _ = try await client.run(Self.set(key(index), "\(index)")) }
            // A writer and reader of the principal's keys throughout the move.
            let writer = Task { () throws -> [Int] in
                var acknowledged: [Int] = []
                for index in 1000..<1400 {
                    guard (try? await client.run(Self.set(key(index), "\(index)")))?.string == "OK" else { continue }
                    acknowledged.append(index)
                    let value = try await client.run(Self.get(key(index))).string
                    #expect(value == "\(index)", "key \(index) read back during the move")
                    if Task.isCancelled { break }
                }
                return acknowledged
            }
            try await cluster.startMigrating(slot: slot, from: source, to: target)
            // A key the source does not have goes to the target: ASK.
            #expect(try await client.run(Self.set(key(5000), "new")).string == "OK")
            try await cluster.finishMigrating(slot: slot, from: source, to: target, primaries: topology.primaries)
            let acknowledged = try await writer.value
            // The map still names the source: MOVED, then the target.
            for index in Array(0..<20) + acknowledged {
                #expect(try await client.run(Self.get(key(index))).string == "\(index)", "key \(index)")
            }
            #expect(try await client.run(Self.get(key(5000))).string == "new")
            let counts = await client.counts
            #expect(counts.asked > 0 && counts.moved > 0, "\(counts)")
            #expect(!acknowledged.isEmpty)
            let owner = try await client.refreshTopology().primary(forSlot: slot)
            #expect(owner?.id == target.primary.id)
            await client.shutdown()
        }
    }

    @Test func aKilledPrimaryIsUnavailableUntilItsReplicaTakesOver() async throws {
        try await withRedisCluster { cluster in
            let client = RedisClusterClient(seeds: cluster.seeds)
            let key = Self.keys.meta(principal: "bob")
            let slot = ClusterSlot.of(Array(key.utf8))
            #expect(try await client.run(Self.set(key, "before")).string == "OK")
            let primary = try #require(try await client.refreshTopology().primary(forSlot: slot))
            try await cluster.node(primary.address).crash()
            let timeout = cluster.seeds[0].commandTimeout
            var failures = 0
            try await eventually("the replica serves slot \(slot)", within: .seconds(30)) {
                let started = ContinuousClock.now
                do throws(LongLinkError) {
                    _ = try await client.run(Self.set(key, "after"))
                    return true
                } catch {
                    #expect(error.code == .unavailable, "\(error)")
                    #expect(ContinuousClock.now - started < timeout + .seconds(1), "failed after its deadline")
                    failures += 1
                    return false
                }
            }
            #expect(failures > 0)
            #expect(try await client.run(Self.get(key)).string == "after")
            // Every node learns of the failover by gossip: bounded.
            try await eventually("the map names a new primary for slot \(slot)", within: .seconds(10)) {
                let owner = (try? await client.refreshTopology())?.primary(forSlot: slot)
                return owner != nil && owner?.id != primary.id
            }
            await client.shutdown()
        }
    }
}
