import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisDedupeStore`` against a real redis-server: `SET NX` semantics across store instances
/// (as across servers), the owner check, expiry and outages.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisDedupeStoreTests {
    @Test func theFirstClaimRunsLaterOnesWaitThenGetTheReply() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration)
            let claim = try await serverA.begin(
                DedupeClaimRequest(
                    principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
            #expect(claim == .run)
            #expect(
                try await serverB.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .running)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .running)
            // Another server cannot finish (or abandon) a claim it does not own.
            #expect(
                try await serverB.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "7", reply: [9], window: .seconds(60))) == false)
            #expect(
                try await serverB.abandon(DedupeAbandonRequest(principal: "alice", clientID: "c1", requestID: "7"))
                    == false)
            #expect(
                try await serverA.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "7", reply: [1, 0, 2], window: .seconds(60))))
            #expect(
                try await serverB.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .finished([1, 0, 2]))
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }

    @Test func theKeyIsPrincipalClientAndRequest() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            // The same ids under another principal, with no principal, another client or request: each its own.
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "bob", clientID: "c1", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: nil, clientID: "c1", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c2", requestID: "1", runningFor: .seconds(30)))
                    == .run)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "2", runningFor: .seconds(30)))
                    == .run)
            // Names that would run together unescaped stay apart.
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "a", clientID: "b:c", requestID: "d", runningFor: .seconds(30)))
                    == .run
            )
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "a", clientID: "b", requestID: "c:d", runningFor: .seconds(30)))
                    == .run
            )
            await store.shutdown()
        }
    }

    @Test func anAbandonedClaimRunsAgainAndAnExpiredOneToo() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "1", runningFor: .seconds(30))) == .run
            )
            #expect(try await store.abandon(DedupeAbandonRequest(principal: "p", clientID: "c", requestID: "1")))
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "1", runningFor: .seconds(30))) == .run
            )

            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "2", runningFor: .milliseconds(30)))
                    == .run)
            // The PX expiry runs in Redis: poll until it has passed, bounded.
            try await eventually("the running claim expires", within: .seconds(5)) {
                (try? await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "2", runningFor: .seconds(30))))
                    == .run
            }
            #expect(
                try await store.finish(
                    DedupeFinishRequest(
                        principal: "p", clientID: "c", requestID: "2", reply: [5], window: .milliseconds(30))))
            try await eventually("the reply leaves the window", within: .seconds(5)) {
                (try? await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "2", runningFor: .seconds(30))))
                    == .run
            }
            await store.shutdown()
        }
    }

    @Test func aPausedRedisFailsClaimsClosed() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "1", runningFor: .seconds(30))) == .run
            )
            redis.pause()
            let started = ContinuousClock.now
            do throws(LongLinkError) {
                _ = try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "2", runningFor: .seconds(30)))
                Issue.record("a claim succeeded while Redis was paused")
            } catch {
                #expect(error.code == .unavailable, "\(error)")
            }
            #expect(ContinuousClock.now - started < .seconds(10))
            redis.resume()
            try await eventually("claims work again", within: .seconds(10)) {
                (try? await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "3", runningFor: .seconds(30))))
                    == .run
            }
            await store.shutdown()
        }
    }

    /// One Redis has no failover to lose entries in: a copy marked resent that finds no entry (its
    /// first copy never reached the store) runs, and no lineage record is written.
    @Test func onOneRedisAResentCopyWithNoEntryRuns() async throws {
        try await withRedisServer { redis in
            let store = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await store.begin(
                    DedupeClaimRequest(principal: "p", clientID: "c", requestID: "1", runningFor: .seconds(30))) == .run
            )
            #expect(
                try await store.begin(
                    DedupeClaimRequest(
                        principal: "p", clientID: "c", requestID: "2", runningFor: .seconds(30), resent: true,
                        window: .seconds(60))) == .run)
            let record = store.keys.dedupeLineage(principal: "p")
            #expect(try await store.client.run(RedisCommand("EXISTS", record).keyed(1..<2)).int64 == 0)
            await store.shutdown()
        }
    }
}
