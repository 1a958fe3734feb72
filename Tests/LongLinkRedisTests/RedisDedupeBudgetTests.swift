import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisDedupeBudgets`` against a real redis-server: a client past its count or byte budget gives
/// up its own oldest finished entries; one that has not enough of them is refused
/// (`RESOURCE_EXHAUSTED` with a retry hint), its reply kept as "not kept"; no other client's entry
/// is ever evicted for it.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisDedupeBudgetTests {
    static func store(_ redis: RedisServerProcess, _ budgets: RedisDedupeBudgets) throws -> RedisDedupeStore {
        var configuration = redis.configuration
        configuration.dedupeBudgets = budgets
        return try RedisDedupeStore(configuration: configuration)
    }

    /// The error `begin` throws, or nil when it answered.
    static func refusal(
        _ store: RedisDedupeStore, _ principal: String?, _ client: String, _ id: String
    ) async -> LongLinkError? {
        do throws(LongLinkError) {
            _ = try await store.begin(
                DedupeClaimRequest(principal: principal, clientID: client, requestID: id, runningFor: .seconds(30)))
            return nil
        } catch {
            return error
        }
    }

    static func begin(
        _ store: RedisDedupeStore, _ principal: String?, _ client: String, _ id: String
    ) async throws -> DedupeClaim {
        try await store.begin(
            DedupeClaimRequest(principal: principal, clientID: client, requestID: id, runningFor: .seconds(30)))
    }

    /// Entries and bytes the accounts of `principal`'s tag hold, and what its index sums to.
    static func accounts(
        _ store: RedisDedupeStore, _ principal: String?
    ) async throws -> (held: (Int, Int), indexed: (Int, Int)) {
        let entry = store.keys.dedupeEntry(principal: principal, clientID: "x", requestID: "x")
        let held = try await store.client.run(RedisCommand("HMGET", entry.accounts, "n", "b").keyed(1..<2))
        let numbers = (held.elements ?? []).map { Int($0.string ?? "0") ?? 0 }
        let members = try await store.client.run(RedisCommand("ZRANGE", entry.index, "0", "-1").keyed(1..<2))
        let charges = (members.elements ?? []).compactMap { $0.string?.split(separator: ":").first.flatMap { Int($0) } }
        return ((numbers.first ?? 0, numbers.last ?? 0), (charges.count, charges.reduce(0, +)))
    }

    /// Claims and finishes `id` for `client` of `principal` with `reply`.
    static func run(
        _ store: RedisDedupeStore, _ principal: String?, _ client: String, _ id: String, _ reply: [UInt8]
    ) async throws {
        #expect(try await begin(store, principal, client, id) == .run, "\(client) \(id)")
        #expect(
            try await store.finish(
                DedupeFinishRequest(principal: principal, clientID: client, requestID: id, reply: reply, window: .seconds(60))))
    }

    /// Which of `ids` of `client` Redis still holds (without claiming them, as `begin` would).
    static func held(
        _ store: RedisDedupeStore, _ principal: String?, _ client: String, _ ids: some Sequence<Int>
    ) async throws -> [Int] {
        var held: [Int] = []
        for id in ids {
            let name = store.keys.dedupe(principal: principal, clientID: client, requestID: "\(id)")
            if try await store.client.run(RedisCommand("EXISTS", name).keyed(1..<2)).int64 == 1 { held.append(id) }
        }
        return held
    }

    /// Three entries per client: a client whose three entries all run is refused its fourth claim
    /// with a hint, and gives up nothing; once one of them finished, the fourth claim runs and
    /// gives up that one (its own oldest finished), never a running claim; another principal is
    /// not refused; room given back (an abandon) is room again.
    @Test func aClientWhoseEntriesAllRunIsRefusedAndGivesUpItsOwnFinishedOnes() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.entriesPerClient = 3
            budgets.entriesPerPrincipal = 5
            let store = try Self.store(redis, budgets)
            for id in ["1", "2", "3"] { #expect(try await Self.begin(store, "alice", "c1", id) == .run) }
            let client = await Self.refusal(store, "alice", "c1", "4")
            #expect(client?.code == .resourceExhausted, "\(String(describing: client))")
            #expect(client?.message.contains("this client holds as many stored requests") == true)
            #expect(client?.message.contains("Retry after") == true)
            let hint = (client?.underlying as? DedupeRefusal)?.retryAfter
            #expect(hint.map { $0 > .zero && $0 <= .seconds(60) } == true, "\(String(describing: hint))")
            #expect(try await Self.held(store, "alice", "c1", 1...4) == [1, 2, 3])

            #expect(
                try await store.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "1", reply: [1], window: .seconds(60))))
            #expect(try await Self.begin(store, "alice", "c1", "4") == .run)
            #expect(try await Self.held(store, "alice", "c1", 1...4) == [2, 3, 4])
            #expect(try await Self.begin(store, "alice", "c1", "2") == .running)
            #expect(try await Self.begin(store, "bob", "c1", "1") == .run)

            #expect(try await store.abandon(DedupeAbandonRequest(principal: "alice", clientID: "c1", requestID: "2")))
            #expect(try await Self.begin(store, "alice", "c1", "5") == .run)
            let (held, indexed) = try await Self.accounts(store, "alice")
            #expect(held == indexed && held.0 == 3, "\(held) \(indexed)")
            await store.shutdown()
        }
    }

    /// Three entries per client, five per principal: c1 makes 20 requests, each past a bound from
    /// its fourth on, and every one runs: c1 gives up its own oldest replies, its newest still
    /// replay, and c2's entries (two replies and a running claim) are untouched, at the client's
    /// bound and at the principal's.
    @Test func aClientPastItsEntryBudgetGivesUpItsOwnOldestRepliesAndNoOneElses() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.entriesPerClient = 3
            budgets.entriesPerPrincipal = 5
            let store = try Self.store(redis, budgets)
            for id in 1...2 { try await Self.run(store, "alice", "c2", "\(id)", [UInt8(id)]) }
            #expect(try await Self.begin(store, "alice", "c2", "3") == .run)
            for id in 1...20 { try await Self.run(store, "alice", "c1", "\(id)", [UInt8(id)]) }
            // The principal's five leave c1 two.
            #expect(try await Self.held(store, "alice", "c1", 1...20) == [19, 20])
            #expect(try await Self.begin(store, "alice", "c1", "20") == .finished([20]))
            #expect(try await Self.begin(store, "alice", "c1", "19") == .finished([19]))
            #expect(try await Self.begin(store, "alice", "c2", "1") == .finished([1]))
            #expect(try await Self.begin(store, "alice", "c2", "2") == .finished([2]))
            #expect(try await Self.begin(store, "alice", "c2", "3") == .running)
            let (held, indexed) = try await Self.accounts(store, "alice")
            #expect(held == indexed && held.0 == 5, "\(held) \(indexed)")

            // At the client's bound alone (another principal, nobody else).
            for id in 1...20 { try await Self.run(store, "bob", "c1", "\(id)", [UInt8(id)]) }
            #expect(try await Self.held(store, "bob", "c1", 1...20) == [18, 19, 20])
            #expect(try await Self.begin(store, "bob", "c1", "18") == .finished([18]))
            try await store.abandon(DedupeAbandonRequest(principal: "alice", clientID: "c2", requestID: "3"))
            await store.shutdown()
        }
    }

    /// On a cluster, where a script may touch only keys of its slot: the entries given up and the
    /// client's order of finished entries are under the tag's hash tag.
    @Test func onAClusterAClientGivesUpItsOwnOldestReplies() async throws {
        try await withRedisCluster { cluster in
            var seeds = cluster.seeds
            for index in seeds.indices { seeds[index].dedupeBudgets.entriesPerClient = 3 }
            let store = try RedisDedupeStore(cluster: seeds)
            for principal in ["alice", "bob", "carol"] {
                for id in 1...10 { try await Self.run(store, principal, "c1", "\(id)", [UInt8(id)]) }
                #expect(try await Self.held(store, principal, "c1", 1...10) == [8, 9, 10], "\(principal)")
                #expect(try await Self.begin(store, principal, "c1", "10") == .finished([10]))
            }
            await store.shutdown()
        }
    }

    /// A flood of client ids under one principal: each new client has no finished entry of its
    /// own to give up, so once the principal's bound is full every one is refused, and the
    /// victim's replies stay and replay.
    @Test func aFloodOfNewClientIDsIsRefusedAndTheVictimKeepsItsReplies() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.entriesPerClient = 3
            budgets.entriesPerPrincipal = 5
            let store = try Self.store(redis, budgets)
            for id in 1...3 { try await Self.run(store, "alice", "victim", "\(id)", [UInt8(id)]) }
            for id in 1...2 { try await Self.run(store, "alice", "flood-\(id)", "1", [0]) }
            for id in 3...30 {
                let refused = await Self.refusal(store, "alice", "flood-\(id)", "1")
                #expect(refused?.message.contains("this principal holds as many stored requests") == true)
            }
            for id in 1...3 { #expect(try await Self.begin(store, "alice", "victim", "\(id)") == .finished([UInt8(id)])) }
            await store.shutdown()
        }
    }

    /// 1,000 bytes per client, 1,200 per principal: c1's replies of 300 bytes each are all kept,
    /// c1 giving up its own oldest ones at the client's bound, and at the principal's (fewer) under
    /// a principal whose c2 holds 600; its newest replay, and c2's reply is untouched.
    @Test func aClientPastItsByteBudgetGivesUpItsOwnOldestReplies() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.bytesPerClient = 1_000
            budgets.bytesPerPrincipal = 1_200
            let store = try Self.store(redis, budgets)
            let reply = [UInt8](repeating: 7, count: 300)
            for id in 1...10 { try await Self.run(store, "alice", "c1", "\(id)", reply) }
            // Two replies and their names fit in 1,000 bytes, four do not.
            let alone = try await Self.held(store, "alice", "c1", 1...10)
            #expect(alone == Array(11 - alone.count...10) && (2...3).contains(alone.count), "\(alone)")
            #expect(try await Self.begin(store, "alice", "c1", "10") == .finished(reply))

            // Under a principal whose c2 holds 600 bytes.
            let other = [UInt8](repeating: 8, count: 600)
            try await Self.run(store, "bob", "c2", "1", other)
            for id in 1...10 { try await Self.run(store, "bob", "c1", "\(id)", reply) }
            let shared = try await Self.held(store, "bob", "c1", 1...10)
            #expect(shared == Array(11 - shared.count...10) && shared.count < alone.count, "\(shared)")
            #expect(try await Self.begin(store, "bob", "c1", "10") == .finished(reply))
            #expect(try await Self.begin(store, "bob", "c2", "1") == .finished(other))
            let (held, indexed) = try await Self.accounts(store, "bob")
            #expect(held == indexed && held.1 <= 1_200, "\(held) \(indexed)")
            await store.shutdown()
        }
    }

    /// 1,000 bytes per client, 1,200 per principal: a reply past either is kept as "not kept", and
    /// its copy is answered `RESOURCE_EXHAUSTED` (it ran), not run again; a reply within them is
    /// replayed; claims past the bytes are refused.
    @Test func aReplyPastTheByteBudgetIsNotKeptAndItsCopiesAreNotRun() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.bytesPerClient = 1_000
            budgets.bytesPerPrincipal = 1_200
            let store = try Self.store(redis, budgets)
            func finish(_ client: String, _ id: String, _ size: Int) async throws -> Bool {
                try await store.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: client, requestID: id, reply: [UInt8](repeating: 7, count: size),
                        window: .seconds(60)))
            }
            #expect(try await Self.begin(store, "alice", "c1", "1") == .run)
            #expect(try await finish("c1", "1", 2_000))
            let copy = await Self.refusal(store, "alice", "c1", "1")
            #expect(copy?.code == .resourceExhausted, "\(String(describing: copy))")
            #expect((copy?.underlying as? DedupeRefusal) == DedupeRefusal(retryAfter: nil, ran: true))
            #expect(copy?.message.contains("ran") == true)

            #expect(try await Self.begin(store, "alice", "c1", "2") == .run)
            #expect(try await finish("c1", "2", 500))
            #expect(try await Self.begin(store, "alice", "c1", "2") == .finished([UInt8](repeating: 7, count: 500)))

            // Within the client's 1,000 bytes, past the principal's 1,200 with c1's.
            #expect(try await Self.begin(store, "alice", "c2", "1") == .run)
            #expect(try await finish("c2", "1", 900))
            #expect(await Self.refusal(store, "alice", "c2", "1")?.code == .resourceExhausted)

            var refused: LongLinkError?
            for id in 10..<100 where refused == nil {
                refused = await Self.refusal(store, "alice", "c3", "\(id)")
            }
            #expect(refused?.message.contains("bytes of stored replies") == true, "\(String(describing: refused))")
            let (held, indexed) = try await Self.accounts(store, "alice")
            #expect(held == indexed && held.1 <= 1_200, "\(held) \(indexed)")
            await store.shutdown()
        }
    }

    /// The accounts move only with the index, and both leave Redis with the last entry they
    /// count: a tenant gone idle leaves nothing behind.
    @Test func theAccountsSumTheIndexAndLeaveWithTheEntries() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            // Long enough that c1's replies outlive the eight round trips to c2's count, even
            // with the machine loaded; short enough that the wait for their expiry stays brief.
            let window = Duration.seconds(3)
            for client in ["c1", "c2"] {
                for id in 1...4 {
                    #expect(try await Self.begin(store, "alice", client, "\(id)") == .run)
                }
                for id in 1...3 {
                    #expect(
                        try await store.finish(
                            DedupeFinishRequest(
                                principal: "alice", clientID: client, requestID: "\(id)", reply: bytes("reply \(id)"),
                                window: window)))
                }
                #expect(
                    try await store.abandon(DedupeAbandonRequest(principal: "alice", clientID: client, requestID: "4")))
            }
            let (held, indexed) = try await Self.accounts(store, "alice")
            #expect(held == indexed && held.0 == 6, "\(held) \(indexed)")
            let entry = store.keys.dedupeEntry(principal: "alice", clientID: "c1", requestID: "1")
            try await eventually("the accounts and the index leave with the entries", within: .seconds(20)) {
                let left = try? await store.client.run(
                    RedisCommand("EXISTS", entry.accounts, entry.index, entry.name).keyed(1..<4))
                return left?.int64 == 0
            }
            await store.shutdown()
        }
    }

    /// Connections without a login share one budget of their own, under one tag no client
    /// chooses: the third anonymous client of two allowed is refused, a principal is not.
    @Test func connectionsWithoutALoginShareTheAnonymousBudget() async throws {
        try await withRedisServer { redis in
            var budgets = RedisDedupeBudgets()
            budgets.anonymousEntries = 2
            let store = try Self.store(redis, budgets)
            #expect(try await Self.begin(store, nil, "a1", "1") == .run)
            #expect(try await Self.begin(store, nil, "a2", "1") == .run)
            let third = await Self.refusal(store, nil, "a3", "1")
            #expect(third?.code == .resourceExhausted)
            #expect(third?.message.contains("connections without a login") == true, "\(String(describing: third))")
            #expect(try await Self.begin(store, "alice", "a3", "1") == .run)
            for (principal, client) in [(nil, "a1"), (nil, "a2"), ("alice", "a3")] as [(String?, String)] {
                try await store.abandon(DedupeAbandonRequest(principal: principal, clientID: client, requestID: "1"))
            }
            await store.shutdown()
        }
    }
}
