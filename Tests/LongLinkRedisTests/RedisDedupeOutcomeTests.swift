import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisDedupeStore/awaitOutcome(principal:clientID:requestID:runningFor:until:)``: a copy of a
/// request that reached server B while server A runs it waits for A's outcome, woken by the notice
/// A's `finish` or `abandon` publishes, bounded by its deadline and its task's cancellation.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisDedupeOutcomeTests {
    /// Polls so slow that only a notice can wake a waiter within the test's bounds.
    static let noticesOnly: (first: Duration, last: Duration) = (.seconds(60), .seconds(60))

    /// Starts B's wait in a task and returns once B has subscribed to the entry's notices.
    static func waiting(
        _ store: RedisDedupeStore, on redis: RedisServerProcess, requestID: String = "7",
        until deadline: ContinuousClock.Instant = .now + .seconds(10)
    ) async throws -> Task<DedupeClaim, any Error> {
        let task = Task {
            try await store.awaitOutcome(
                DedupeWaitRequest(
                    principal: "alice", clientID: "c1", requestID: requestID, runningFor: .seconds(30), until: deadline)
            )
        }
        let channel = store.keys.dedupeNotice(
            entry: store.keys.dedupe(principal: "alice", clientID: "c1", requestID: requestID))
        let probe = RedisClient(configuration: redis.configuration)
        // B's subscription is in another task: nothing to await on but Redis's count of it.
        try await eventually("B subscribes to the entry's notices", within: .seconds(5)) {
            (try? await probe.numberOfSubscribers(channel)) == 1
        }
        await probe.shutdown()
        return task
    }

    @Test func aFinishWakesTheWaiterWithTheReply() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration, pollIntervals: Self.noticesOnly)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .run)
            let waiter = try await Self.waiting(serverB, on: redis)
            let finished = ContinuousClock.now
            #expect(
                try await serverA.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "7", reply: [1, 0, 2], window: .seconds(60))))
            let outcome = try await within(.seconds(5), "B's outcome") { try await waiter.value }
            #expect(outcome == .finished([1, 0, 2]))
            // Far below the 60 s poll and B's 10 s deadline: the notice woke B (with room for a
            // loaded machine).
            #expect(ContinuousClock.now - finished < .seconds(5))
            // B left: the channel has no subscriber once awaitOutcome returned.
            let channel = serverB.keys.dedupeNotice(
                entry: serverB.keys.dedupe(principal: "alice", clientID: "c1", requestID: "7"))
            #expect(try await serverA.client.numberOfSubscribers(channel) == 0)
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }

    @Test func anAbandonHandsTheRequestToTheWaiter() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration, pollIntervals: Self.noticesOnly)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .run)
            let waiter = try await Self.waiting(serverB, on: redis)
            #expect(try await serverA.abandon(DedupeAbandonRequest(principal: "alice", clientID: "c1", requestID: "7")))
            #expect(try await within(.seconds(5), "B's outcome") { try await waiter.value } == .run)
            // B holds the claim now: A cannot take it back, and B can finish it.
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .running)
            #expect(
                try await serverB.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "7", reply: [4], window: .seconds(60))))
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }

    @Test func anOutcomeStoredWithoutANoticeIsFoundByPolling() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .run)
            let waiter = try await Self.waiting(serverB, on: redis)
            // As if the notice were lost: the reply is written with no PUBLISH.
            let key = serverA.keys.dedupe(principal: "alice", clientID: "c1", requestID: "7")
            _ = try await serverA.client.run(RedisCommand("SET", key, "Dlate"))
            #expect(try await within(.seconds(5), "B's outcome") { try await waiter.value } == .finished(bytes("late")))
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }

    @Test func theDeadlineEndsTheWaitWithRunning() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .run)
            let started = ContinuousClock.now
            let outcome = try await serverB.awaitOutcome(
                DedupeWaitRequest(
                    principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30),
                    until: started + .milliseconds(300)))
            let waited = ContinuousClock.now - started
            #expect(outcome == .running)
            // Ended by the deadline, not the 30 s claim: the bound leaves room for the subscription
            // and a check that each may take a command timeout (1.5 s) on a loaded machine.
            #expect(waited >= .milliseconds(300) && waited < .seconds(6), "\(waited)")
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }

    @Test func cancellingTheWaitReturnsPromptlyAndLeavesTheChannel() async throws {
        try await withRedisServer { redis in
            let serverA = try RedisDedupeStore(configuration: redis.configuration)
            let serverB = try RedisDedupeStore(configuration: redis.configuration, pollIntervals: Self.noticesOnly)
            #expect(
                try await serverA.begin(
                    DedupeClaimRequest(principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30)))
                    == .run)
            // Two waiters on one entry: the channel stays while one still needs it.
            let first = try await Self.waiting(serverB, on: redis)
            let second = Task {
                try await serverB.awaitOutcome(
                    DedupeWaitRequest(
                        principal: "alice", clientID: "c1", requestID: "7", runningFor: .seconds(30),
                        until: .now + .seconds(30)))
            }
            let channel = serverB.keys.dedupeNotice(
                entry: serverB.keys.dedupe(principal: "alice", clientID: "c1", requestID: "7"))
            try await eventually("the second waiter joins", within: .seconds(5)) {
                serverB.notices.waiterCount(channel) == 2
            }
            let cancelled = ContinuousClock.now
            first.cancel()
            #expect(try await within(.seconds(5), "the cancelled wait") { try await first.value } == .running)
            #expect(ContinuousClock.now - cancelled < .seconds(5))
            #expect(serverB.notices.waiterCount(channel) == 1)
            #expect(try await serverA.client.numberOfSubscribers(channel) == 1)
            #expect(
                try await serverA.finish(
                    DedupeFinishRequest(
                        principal: "alice", clientID: "c1", requestID: "7", reply: [9], window: .seconds(60))))
            #expect(try await within(.seconds(5), "the other wait") { try await second.value } == .finished([9]))
            #expect(try await serverA.client.numberOfSubscribers(channel) == 0)
            await serverA.shutdown()
            await serverB.shutdown()
        }
    }
}
