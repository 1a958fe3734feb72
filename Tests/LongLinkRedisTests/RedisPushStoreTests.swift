import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// ``RedisPushStore`` against a real redis-server of the test's own.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisPushStoreTests {
    @Test func produceSyncAndAckKeepSeqOrder() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            var stored: [StoredPush] = []
            for index in 1...5 {
                stored.append(
                    try await store.append(
                        PushAppend(principal: "alice", topic: "t\(index)", payload: [UInt8(index), 0, 13])))
            }
            #expect(stored.map(\.seq) == [1, 2, 3, 4, 5])
            let epoch = try #require(stored.first?.epoch)
            #expect(epoch != 0 && stored.allSatisfy { $0.epoch == epoch })
            #expect(try await store.unacknowledged(PushRead(principal: "alice", after: 0, limit: 10)) == stored)
            #expect(
                try await store.unacknowledged(PushRead(principal: "alice", after: 2, limit: 2)).map(\.seq) == [3, 4])
            // Another principal has a sequence of its own.
            #expect(try await store.append(PushAppend(principal: "bob", topic: "x", payload: [])).seq == 1)

            try await store.acknowledge(AcknowledgedPushes(principal: "alice", seqs: [2, 4, 99]))
            #expect(try await store.unacknowledgedCount(principal: "alice") == 3)
            #expect(
                try await store.unacknowledged(PushRead(principal: "alice", after: 0, limit: 10)).map(\.seq) == [
                    1, 3, 5,
                ])
            // Acknowledged seqs are not given again.
            #expect(try await store.append(PushAppend(principal: "alice", topic: "t6", payload: [])).seq == 6)
            await store.shutdown()
        }
    }

    @Test func syncReadsInPagesUpToTheLimit() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            for index in 0..<600 {
                _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [UInt8(index % 256)]))
            }
            let all = try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 1_000))
            #expect(all.map(\.seq) == Array(1...600))
            #expect(
                try await store.unacknowledged(PushRead(principal: "p", after: 100, limit: 300)).map(\.seq)
                    == Array(101...400))
            await store.shutdown()
        }
    }

    @Test func theBoundsRefuseAndAnAckMakesRoom() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(
                configuration: redis.configuration, capacityPerPrincipal: 3, bytesPerPrincipal: 100)
            for _ in 0..<3 { _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1])) }
            do throws(LongLinkError) {
                _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
                Issue.record("a push past the count bound was stored")
            } catch {
                #expect(error.code == .resourceExhausted)
            }
            try await store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [1]))
            #expect(try await store.append(PushAppend(principal: "p", topic: "t", payload: [1])).seq == 4)

            // Bytes: 60 + 41 > 100; after the ack of the first the second fits.
            _ = try await store.append(PushAppend(principal: "q", topic: "", payload: [UInt8](repeating: 0, count: 60)))
            do throws(LongLinkError) {
                _ = try await store.append(
                    PushAppend(principal: "q", topic: "", payload: [UInt8](repeating: 0, count: 41)))
                Issue.record("a push past the byte bound was stored")
            } catch {
                #expect(error.code == .resourceExhausted)
            }
            try await store.acknowledge(AcknowledgedPushes(principal: "q", seqs: [1]))
            #expect(
                try await store.append(PushAppend(principal: "q", topic: "", payload: [UInt8](repeating: 0, count: 41)))
                    .seq == 2)
            await store.shutdown()
        }
    }

    @Test func aRestartWithoutPersistenceStartsANewEpoch() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let before = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [2]))
            try await redis.restartWithoutPersistence()
            // The store reconnects by itself (the first call may meet the closed connection).
            var after: StoredPush?
            try await eventually("the store works again after the restart", within: .seconds(10)) {
                after = try? await store.append(PushAppend(principal: "p", topic: "t", payload: [3]))
                return after != nil
            }
            let push = try #require(after)
            #expect(push.seq == 1)
            #expect(push.epoch != before.epoch && push.epoch != 0)
            #expect(try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 10)) == [push])
            await store.shutdown()
        }
    }

    @Test func aPausedRedisFailsCallsWithUnavailableInTime() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let first = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            redis.pause()
            let started = ContinuousClock.now
            for _ in 0..<3 {
                do throws(LongLinkError) {
                    _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [2]))
                    Issue.record("a push was acknowledged while Redis was paused")
                } catch {
                    #expect(error.code == .unavailable, "\(error)")
                }
                do throws(LongLinkError) {
                    _ = try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 10))
                    Issue.record("a sync answered while Redis was paused")
                } catch {
                    #expect(error.code == .unavailable, "\(error)")
                }
            }
            // Six calls, each ending within one connect attempt or one command timeout (or at once
            // in backoff); both are counted per call so a loaded machine's late timers still fit.
            let bound = (redis.configuration.commandTimeout + redis.configuration.connectTimeout) * 6
            #expect(ContinuousClock.now - started < bound)
            redis.resume()
            var next: StoredPush?
            try await eventually("the store works again after the pause", within: .seconds(10)) {
                next = try? await store.append(PushAppend(principal: "p", topic: "t", payload: [3]))
                return next != nil
            }
            // Pushes whose reply timed out may have been stored when Redis woke: never fewer.
            let pushes = try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 100))
            #expect(pushes.first == first)
            #expect(pushes.last == next)
            #expect(next?.epoch == first.epoch)
            #expect(pushes.map(\.seq) == pushes.map(\.seq).sorted())
            await store.shutdown()
        }
    }

    @Test func producePublishesTheSeqOnThePrincipalsChannel() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let messages = Mailbox<RESPValue>()
            let subscriber = try await RedisConnection.open(redis.configuration, on: store.backend.loop) { connection in
                connection.onPush = { messages.put($0) }
            }
            _ = try await subscriber.send(
                [RedisCommand("SUBSCRIBE", store.channel(for: "p"))], timeout: .seconds(2), expectReplies: false)
            let confirmation = try await messages.next(within: .seconds(5))
            #expect(confirmation.elements?.first?.string == "subscribe")
            let push = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            let message = try await messages.next(within: .seconds(5))
            #expect(
                message.elements?.map { $0.string ?? "" } == ["message", store.channel(for: "p"), "\(push.epoch):1"])
            subscriber.close()
            await store.shutdown()
        }
    }

    @Test func aFlushedScriptCacheFallsBackToEval() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            let exists = RedisCommand("SCRIPT", "EXISTS", PushScripts.produce.sha)
            #expect(try await store.client.run(exists).elements == [.integer(1)])
            _ = try await store.client.run(RedisCommand("SCRIPT", "FLUSH"))
            #expect(try await store.client.run(exists).elements == [.integer(0)])
            #expect(try await store.append(PushAppend(principal: "p", topic: "t", payload: [2])).seq == 2)
            #expect(try await store.client.run(exists).elements == [.integer(1)])
            await store.shutdown()
        }
    }

    @Test func keysCarryThePrefixAndTheHashTag() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.keyPrefix = "fleet7:"
            let store = try RedisPushStore(configuration: configuration)
            _ = try await store.append(PushAppend(principal: "a{b}:c", topic: "t", payload: [1]))
            let keys = try await store.client.run(RedisCommand("KEYS", "*")).elements?.compactMap(\.string).sorted()
            #expect(keys == ["fleet7:{p:a%7Bb%7D%3Ac}:m", "fleet7:{p:a%7Bb%7D%3Ac}:s"])
            await store.shutdown()
        }
    }
}
