import LongLinkTestSupport
import LongLinkCore
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// Pub/sub on its own connection: messages as RESP3 pushes through a callback, and a new
/// `subscribed` after Redis came back, with the channels subscribed again.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisSubscriberTests {
    @Test func messagesArriveAndSubscriptionsSurviveARestart() async throws {
        try await withRedisServer { redis in
            let events = Mailbox<RedisSubscriber.Event>()
            let subscriber = RedisSubscriber(configuration: redis.configuration, channels: ["a"]) { events.put($0) }
            await subscriber.start()
            #expect(try await events.next(within: .seconds(5)) == .subscribed)
            await subscriber.subscribe("b")
            let publisher = RedisClient(configuration: redis.configuration)
            // `subscribe` returns once Redis has confirmed: no waiting here.
            #expect(try await publisher.numberOfSubscribers("b") == 1)
            _ = try await publisher.run(RedisCommand("PUBLISH", "a", "one"))
            _ = try await publisher.run(RedisCommand("PUBLISH", "b", "two"))
            _ = try await publisher.run(RedisCommand("PUBLISH", "c", "unheard"))
            #expect(try await events.next(within: .seconds(5)) == .message(channel: "a", payload: bytes("one")))
            #expect(try await events.next(within: .seconds(5)) == .message(channel: "b", payload: bytes("two")))

            try await redis.restartWithoutPersistence()
            #expect(try await events.next(within: .seconds(10)) == .subscribed)
            try await eventually("the publisher reconnects", within: .seconds(10)) {
                (try? await publisher.run(RedisCommand("PUBLISH", "b", "three"))) == .integer(1)
            }
            #expect(try await events.next(within: .seconds(5)) == .message(channel: "b", payload: bytes("three")))

            await subscriber.unsubscribe("a")
            #expect(try await publisher.numberOfSubscribers("a") == 0)
            #expect(try await publisher.run(RedisCommand("PUBLISH", "a", "gone")) == .integer(0))
            #expect(events.count == 0)

            await subscriber.shutdown()
            await publisher.shutdown()
        }
    }

    /// The old stream kept the newest 4096 events and dropped the rest silently; the callback
    /// drops none, however many arrive at once.
    @Test func aBurstLargerThanAnyBufferArrivesWhole() async throws {
        try await withRedisServer { redis in
            let received = Shared<[String]>([])
            let subscriber = RedisSubscriber(configuration: redis.configuration, channels: ["burst"]) { event in
                if case .message(_, let payload) = event {
                    received.withLock { $0.append(String(decoding: payload, as: UTF8.self)) }
                }
            }
            await subscriber.start()
            let publisher = RedisClient(configuration: redis.configuration)
            let count = 10_000
            let replies = try await publisher.send((0..<count).map { RedisCommand("PUBLISH", "burst", "\($0)") })
            #expect(replies.allSatisfy { $0 == .integer(1) })
            try await eventually("every message arrives", within: .seconds(10)) {
                received.withLock { $0.count } >= count
            }
            #expect(received.withLock { $0 } == (0..<count).map { "\($0)" })
            await subscriber.shutdown()
            await publisher.shutdown()
        }
    }

    /// Concurrent updates of one channel leave what the last read of `wanted` said.
    @Test func racingUpdatesLeaveTheLastAnswer() async throws {
        try await withRedisServer { redis in
            let subscriber = RedisSubscriber(configuration: redis.configuration) { _ in }
            await subscriber.start()
            let wanted = Shared(false)
            let publisher = RedisClient(configuration: redis.configuration)
            for round in 0..<20 {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            wanted.withLock { $0 = (index + round) % 3 == 0 }
                            await subscriber.update("x") { wanted.withLock { $0 } }
                        }
                    }
                }
                // A last update settles the truth; Redis must agree with it once it returns.
                await subscriber.update("x") { wanted.withLock { $0 } }
                let expected: Int64 = wanted.withLock { $0 } ? 1 : 0
                let subscribers = try await publisher.numberOfSubscribers("x")
                #expect(subscribers == expected, "round \(round)")
            }
            await subscriber.shutdown()
            await publisher.shutdown()
        }
    }
}

/// A value that test closures on several threads share: the package's pthread-based lock, which
/// ThreadSanitizer understands (it cannot see `Synchronization.Mutex` hand over on Linux).
typealias Shared = Locked

extension RedisCommandRunner {
    /// `PUBSUB NUMSUB channel`: how many connections are subscribed to it.
    func numberOfSubscribers(_ channel: String) async throws -> Int64? {
        try await run(RedisCommand("PUBSUB", "NUMSUB", channel)).elements?.last?.int64
    }
}
