import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// Group commit of the shared de-dup window (``DedupeQueue``,
/// ``RedisDedupeStore/sendBatch(_:backend:running:budgets:sending:)``):
/// the claims and stored replies of one turn leave in one round trip, one script call per hash
/// tag, each entry settled as if alone.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisDedupeBatchTests {
    /// The entry of request `id` of client `c` of principal `p`.
    static func entry(_ id: String) -> DedupeEntryKey {
        RedisKeys(prefix: "t:").dedupeEntry(principal: "p", clientID: "c", requestID: id)
    }

    /// Operations queued while a batch is in flight leave together in the next, whatever their
    /// number; the first leaves at once.
    @Test func operationsQueuedBehindABatchLeaveInTheNext() async throws {
        let sent = Mailbox<Int>()
        let gate = OneShot<Void>()
        let queue = DedupeQueue { batch, sending in
            sent.put(batch.count)
            if batch.contains(where: { $0.entry == Self.entry("k0") }) { await gate.value() }
            sending(1)
            for item in batch { item.outcome.resume(.success(.integer(1))) }
        }
        let first = Task { try await queue.submit(Self.entry("k0"), .claim(term: 1000)) }
        #expect(try await sent.next(within: .seconds(10), "the first batch") == 1)
        let rest = (1...10).map { n in Task { try await queue.submit(Self.entry("k\(n)"), .claim(term: 1000)) } }
        try await eventually("ten queued behind the first", within: .seconds(10)) { queue.queuedCount == 10 }
        gate.resume(())
        #expect(try await sent.next(within: .seconds(10), "the second batch") == 10)
        #expect(try await first.value == .integer(1))
        for task in rest { #expect(try await task.value == .integer(1)) }
        #expect(queue.sent.batches == 2 && queue.sent.calls == 2)
    }

    /// 20 claims of two principals made while a claim is on its way cost the next round trip two
    /// script calls (one per hash tag), and each is the claim `SET NX GET` makes alone: another
    /// store then finds them running.
    @Test func concurrentClaimsOfATurnCostOneScriptCallPerTag() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            // Room for the pause below on a loaded machine.
            configuration.commandTimeout = .seconds(30)
            let store = try RedisDedupeStore(configuration: configuration)
            let other = try RedisDedupeStore(configuration: configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "a", clientID: "c", requestID: "0", runningFor: .seconds(30))) == .run
            )
            let before = store.claims.sent
            redis.pause()
            let held = Task {
                try await store.begin(
                    DedupeClaimRequest(principal: "a", clientID: "c", requestID: "1", runningFor: .seconds(30)))
            }
            try await eventually("the held claim left", within: .seconds(10)) {
                store.claims.sent.batches > before.batches
            }
            let claims = (2..<22).map { n in
                Task {
                    try await store.begin(
                        DedupeClaimRequest(
                            principal: n % 2 == 0 ? "a" : "b", clientID: "c", requestID: "\(n)",
                            runningFor: .seconds(30)))
                }
            }
            try await eventually("20 claims queued", within: .seconds(10)) { store.claims.queuedCount == 20 }
            redis.resume()
            #expect(try await held.value == .run)
            for claim in claims { #expect(try await claim.value == .run) }
            let after = store.claims.sent
            #expect(after.batches - before.batches == 2)
            // One call per tag per batch (a claim per call would be 21).
            #expect(after.calls - before.calls == 3)
            for n in 2..<22 {
                #expect(
                    try await other.begin(
                        DedupeClaimRequest(
                            principal: n % 2 == 0 ? "a" : "b", clientID: "c", requestID: "\(n)",
                            runningFor: .seconds(30)))
                        == .running)
            }
            await store.shutdown()
            await other.shutdown()
        }
    }

    /// An entry Redis refuses fails only its own operation: the claims and replies beside it in the
    /// call are made and stored.
    @Test func anEntryRedisRefusesFailsOnlyItsOwnRequest() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let entries = ["1", "2", "3"].map { store.keys.dedupeEntry(principal: "p", clientID: "c", requestID: $0) }
            let keys = entries.map(\.name)
            _ = try await store.client.run(RedisCommand("HSET", keys[1], "f", "v"))
            let claims = entries.map { DedupeOperation(entry: $0, operation: .claim(term: 30_000)) }
            let running = store.keeper.running
            #expect(await RedisDedupeStore.sendBatch(claims, backend: store.backend, running: running) == 1)
            #expect(try await claims[0].outcome.value().get() == .bulkString([]))
            #expect(try await claims[2].outcome.value().get() == .bulkString([]))
            guard case .failure(let error) = await claims[1].outcome.value() else {
                Issue.record("a claim of a hash succeeded")
                return
            }
            #expect(error.code == .internalError && error.message.contains("WRONGTYPE"), "\(error)")

            let finishes = entries.map {
                DedupeOperation(entry: $0, operation: .finish(value: bytes("Dok"), window: 30_000))
            }
            #expect(await RedisDedupeStore.sendBatch(finishes, backend: store.backend, running: running) == 1)
            #expect(try await finishes[0].outcome.value().get() == .integer(1))
            #expect(try await finishes[2].outcome.value().get() == .integer(1))
            guard case .failure = await finishes[1].outcome.value() else {
                Issue.record("a reply was stored over a hash")
                return
            }
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "3", runningFor: .seconds(30)))
                    == .finished(bytes("ok")))
            await store.shutdown()
        }
    }
}
