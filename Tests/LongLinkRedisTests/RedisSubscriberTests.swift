import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// Pub/sub on its own connection: messages as RESP3 pushes, and a new `subscribed` after Redis
/// came back, with the channels subscribed again.
@Suite(.enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(1)))
struct RedisSubscriberTests {
    @Test func messagesArriveAndSubscriptionsSurviveARestart() async throws {
        try await withRedisServer { redis in
            let subscriber = RedisSubscriber(configuration: redis.configuration, channels: ["a"])
            let events = Mailbox<RedisSubscriber.Event>()
            let reader = Task {
                for await event in subscriber.events { events.put(event) }
            }
            await subscriber.start()
            #expect(try await events.next(within: .seconds(5)) == .subscribed)
            await subscriber.subscribe("b")
            let publisher = RedisClient(configuration: redis.configuration)
            // The SUBSCRIBE of "b" may still be on its way: publish until it counts one receiver.
            try await eventually("b is subscribed", within: .seconds(5)) {
                (try? await publisher.run(RedisCommand("PUBSUB", "NUMSUB", "b")))?.elements?.last == .integer(1)
            }
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
            #expect(events.count == 0)

            await subscriber.shutdown()
            await reader.value
            await publisher.shutdown()
        }
    }
}
