import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisDedupeStore`` asked again after a call whose reply was lost (the server retries a claim
/// that failed `unavailable`): its own lost claim is its own once, a claim that ran here never.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisDedupeRetryTests {
    /// A claim of request `id` of client `c` of `p`, for 30 s.
    static func claim(_ id: String) -> DedupeClaimRequest {
        DedupeClaimRequest(principal: "p", clientID: "c", requestID: id, runningFor: .seconds(30))
    }

    /// `reply` to request `id` of client `c` of `p`, kept a minute.
    static func reply(_ reply: [UInt8], to id: String) -> DedupeFinishRequest {
        DedupeFinishRequest(principal: "p", clientID: "c", requestID: id, reply: reply, window: .seconds(60))
    }

    /// Makes a claim of request `id` fail with `unavailable` (Redis paused past the command
    /// timeout), then lets Redis answer again with the entry holding the store's running value, as
    /// when the claim was written but its reply lost (whether paused Redis ran it or not).
    static func loseClaim(
        _ id: String, of store: RedisDedupeStore, on redis: RedisServerProcess, client: RedisClient
    ) async throws {
        // The store's lease is set by its first claim: the lost one must be a claim, not the lease.
        try await warm(store, "warm-\(id)")
        redis.pause()
        do throws(LongLinkError) {
            _ = try await store.begin(Self.claim(id))
            redis.resume()
            Issue.record("a claim succeeded while Redis was paused")
        } catch {
            redis.resume()
            #expect(error.code == .unavailable, "\(error)")
        }
        let entry = store.keys.dedupe(principal: "p", clientID: "c", requestID: id)
        try await eventually("Redis answers again", within: .seconds(10)) {
            (try? await client.run(RedisCommand("SET", entry, store.keeper.running, "PX", "30000", "NX"))) != nil
        }
        let held = try await client.run(RedisCommand("GET", entry))
        try #require(held.string == store.keeper.running, "the entry holds \(held)")
    }

    /// Claims `id` until Redis answers: on a loaded machine the first command (the connection, the
    /// script's load) can outlast the tests' 1.5 s command timeout, which is kept short for the pauses.
    static func warm(_ store: RedisDedupeStore, _ id: String) async throws {
        try await eventually("Redis answers a first claim", within: .seconds(30)) {
            (try? await store.begin(Self.claim(id))) != nil
        }
    }

    @Test func aClaimWhoseReplyWasLostRunsOnceWhenAskedAgain() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let client = RedisClient(configuration: redis.configuration)
            try await Self.loseClaim("1", of: store, on: redis, client: client)
            // Asked again, the claim is the store's own: the request runs (it never ran).
            #expect(
                try await store.begin(Self.claim("1")) == .run)
            // Once: a further copy finds it running.
            #expect(
                try await store.begin(Self.claim("1"))
                    == .running)
            // It is a claim like any other: its reply is stored and replayed.
            #expect(
                try await store.finish(Self.reply([7], to: "1")))
            #expect(
                try await store.begin(Self.claim("1"))
                    == .finished([7]))
            await client.shutdown()
            await store.shutdown()
        }
    }

    /// A waiter whose check lost its reply finds its own claim when it looks again.
    @Test func aWaitWhoseClaimWasLostRunsWhenWaitedAgain() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let client = RedisClient(configuration: redis.configuration)
            try await Self.loseClaim("2", of: store, on: redis, client: client)
            #expect(
                try await store.awaitOutcome(
                    DedupeWaitRequest(
                        principal: "p", clientID: "c", requestID: "2", runningFor: .seconds(30),
                        until: .now + .seconds(5)))
                    == .run)
            await client.shutdown()
            await store.shutdown()
        }
    }

    /// The request ran here and its reply could not be stored (its value stays in Redis for the
    /// claim's term); a later copy's claim loses its reply too. Asked again, that copy must not
    /// take the value for its own lost claim: the request ran.
    @Test func aClaimThatRanIsNotRunAgainWhenItsReplyCouldNotBeStored() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            let client = RedisClient(configuration: redis.configuration)
            try await Self.warm(store, "warm")
            #expect(
                try await store.begin(Self.claim("3")) == .run)
            redis.pause()
            await #expect(throws: LongLinkError.self) {
                try await store.finish(Self.reply([1], to: "3"))
            }
            redis.resume()
            let entry = store.keys.dedupe(principal: "p", clientID: "c", requestID: "3")
            // Whatever paused Redis did with the reply, the claim's value is what stays.
            try await eventually("Redis answers again", within: .seconds(10)) {
                (try? await client.run(RedisCommand("SET", entry, store.keeper.running, "PX", "30000"))) != nil
            }
            try await Self.loseClaim("3", of: store, on: redis, client: client)
            #expect(
                try await store.begin(Self.claim("3"))
                    == .running)
            await client.shutdown()
            await store.shutdown()
        }
    }
}
