import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// What the de-dup window's claim costs Redis inside its script, on a real redis-server: the claim
/// is on every fleet request's path, so its commands are counted, not only its round trips.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(5)))
struct RedisDedupeScriptCostTests {
    /// Calls per command since the last `CONFIG RESETSTAT`, from `INFO commandstats`.
    static func calls(_ store: RedisDedupeStore) async throws -> [String: Int] {
        let info = try await store.client.run(RedisCommand("INFO", "commandstats")).string ?? ""
        var calls: [String: Int] = [:]
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
            let parts = line.dropFirst("cmdstat_".count).split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let field = parts[1].split(separator: ",").first,
                field.hasPrefix("calls=")
            else { continue }
            calls[String(parts[0])] = Int(field.dropFirst("calls=".count))
        }
        return calls
    }

    /// A claim in a tag that already holds a stored reply reads the tag's and the client's accounts
    /// in one `HMGET` and, its term ending before that reply's window, leaves the index's and the
    /// accounts' expiry alone after one `PTTL` (no `ZRANGE` of the index, no `PEXPIREAT`).
    @Test func aClaimReadsTheAccountsOnceAndLeavesALongerExpiryAlone() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(
                try await store.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c", requestID: "1", reply: bytes("reply"),
                        window: .seconds(120))))
            _ = try await store.client.run(RedisCommand("CONFIG", "RESETSTAT"))
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c", requestID: "2", runningFor: .seconds(30)))
                    == .run)
            let calls = try await Self.calls(store)
            #expect(calls["hmget"] == 1, "\(calls)")
            #expect(calls["hget"] == nil, "\(calls)")
            #expect(calls["zrange"] == nil, "\(calls)")
            #expect(calls["pexpireat"] == nil, "\(calls)")
            // The claim is still charged and its entry still expires with the index.
            let entry = store.keys.dedupeEntry(principal: "alice", clientID: "c", requestID: "2")
            let held = try await store.client.run(RedisCommand("HGET", entry.accounts, "n").keyed(1..<2))
            #expect(held.string == "2")
            let expiries = try await store.client.run(RedisCommand("PTTL", entry.index).keyed(1..<2)).int64
            #expect((expiries ?? 0) > 60_000, "the index keeps the reply's expiry: \(String(describing: expiries))")
            await store.shutdown()
        }
    }

    /// Replies of one client stored in one call set the expiry of the client's order of finished
    /// entries once (after one `PTTL`), not once per reply; it still lasts until the latest of them.
    @Test func repliesOfOneClientInOneCallSetItsOrdersExpiryOnce() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let entries = ["1", "2", "3"].map {
                store.keys.dedupeEntry(principal: "carol", clientID: "c", requestID: $0)
            }
            let running = store.keeper.running
            let claims = entries.map { DedupeOperation(entry: $0, operation: .claim(term: 30_000)) }
            #expect(await RedisDedupeStore.sendBatch(claims, backend: store.backend, running: running) == 1)
            for claim in claims { #expect(try await claim.outcome.value().get() == .bulkString([])) }
            _ = try await store.client.run(RedisCommand("CONFIG", "RESETSTAT"))
            let finishes = zip(entries, [100_000, 300_000, 200_000]).map { entry, window in
                DedupeOperation(entry: entry, operation: .finish(value: bytes("Dok"), window: Int64(window)))
            }
            #expect(await RedisDedupeStore.sendBatch(finishes, backend: store.backend, running: running) == 1)
            for finish in finishes { #expect(try await finish.outcome.value().get() == .integer(1)) }
            let calls = try await Self.calls(store)
            // The order's, then the index's and the accounts' (a claim left before its expiry).
            #expect(calls["pexpireat"] == 3, "\(calls)")
            #expect(calls["zrange"] == 1, "\(calls)")
            let order = String(entries[0].index.dropLast(3)) + ":df:c"
            let ttl = try await store.client.run(RedisCommand("PTTL", order).keyed(1..<2)).int64 ?? 0
            #expect(ttl > 250_000 && ttl <= 300_001, "\(order): \(ttl)")
            await store.shutdown()
        }
    }

    /// Claims of one client in one call at its entry bound each give up one of its oldest
    /// replies, oldest first, but read its order of finished entries once: one prune, one
    /// `ZCARD`, one `ZRANGE` of it.
    @Test func claimsAtTheBoundInOneCallReadTheClientsOrderOnce() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.dedupeBudgets.entriesPerClient = 4
            let store = try RedisDedupeStore(configuration: configuration)
            for id in 1...4 {
                #expect(
                    try await store.begin(
                        DedupeClaimRequest(
                            principal: "dave", clientID: "c", requestID: "\(id)", runningFor: .seconds(30)))
                        == .run)
                #expect(
                    try await store.finish(
                        DedupeFinishRequest(
                            principal: "dave", clientID: "c", requestID: "\(id)", reply: bytes("reply \(id)"),
                            window: .seconds(100 + id))))
            }
            let entries = ["5", "6", "7"].map {
                store.keys.dedupeEntry(principal: "dave", clientID: "c", requestID: $0)
            }
            let claims = entries.map { DedupeOperation(entry: $0, operation: .claim(term: 30_000)) }
            _ = try await store.client.run(RedisCommand("CONFIG", "RESETSTAT"))
            #expect(
                await RedisDedupeStore.sendBatch(
                    claims, backend: store.backend, running: store.keeper.running,
                    budgets: configuration.dedupeBudgets) == 1)
            for claim in claims { #expect(try await claim.outcome.value().get() == .bulkString([])) }
            let calls = try await Self.calls(store)
            #expect(calls["zcard"] == 1, "\(calls)")
            #expect(calls["zremrangebyscore"] == 1, "\(calls)")
            // The order's, then the index's last (entries left before their expiry).
            #expect(calls["zrange"] == 2, "\(calls)")
            #expect(calls["del"] == 3, "\(calls)")
            // The three oldest replies went; the newest and the three claims are left.
            for (id, left) in [("1", false), ("2", false), ("3", false), ("4", true)] {
                let entry = store.keys.dedupeEntry(principal: "dave", clientID: "c", requestID: id)
                let exists = try await store.client.run(RedisCommand("EXISTS", entry.name).keyed(1..<2)).int64
                #expect(exists == (left ? 1 : 0), "reply \(id)")
            }
            let entry = store.keys.dedupeEntry(principal: "dave", clientID: "c", requestID: "x")
            let held = try await store.client.run(RedisCommand("HMGET", entry.accounts, "n", "n:c").keyed(1..<2))
            #expect(held.elements?.map { $0.string } == ["4", "4"], "\(held)")
            await store.shutdown()
        }
    }

    /// A claim sets the index's and the accounts' expiry to its term; its stored reply, with a
    /// longer window, extends both to the reply's; another client's claim given up leaves them
    /// following the reply, the last entry left.
    @Test func theIndexFollowsItsLongestEntryAndLeavesWithTheLast() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let entry = store.keys.dedupeEntry(principal: "bob", clientID: "c", requestID: "1")
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "bob", clientID: "c", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            let claimed = try await store.client.run(RedisCommand("PTTL", entry.accounts).keyed(1..<2)).int64 ?? 0
            #expect(claimed > 0 && claimed <= 30_001, "\(claimed)")
            #expect(
                try await store.finish(
                    DedupeFinishRequest(
                        principal: "bob", clientID: "c", requestID: "1", reply: bytes("reply"), window: .seconds(300))))
            for key in [entry.index, entry.accounts] {
                let ttl = try await store.client.run(RedisCommand("PTTL", key).keyed(1..<2)).int64 ?? 0
                #expect(ttl > 200_000, "\(key): \(ttl)")
            }
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "bob", clientID: "d", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(try await store.abandon(DedupeAbandonRequest(principal: "bob", clientID: "d", requestID: "1")))
            let ttl = try await store.client.run(RedisCommand("PTTL", entry.index).keyed(1..<2)).int64 ?? 0
            #expect(ttl > 200_000, "\(ttl)")
            await store.shutdown()
        }
    }
}
