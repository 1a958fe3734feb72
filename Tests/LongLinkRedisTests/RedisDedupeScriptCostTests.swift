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
