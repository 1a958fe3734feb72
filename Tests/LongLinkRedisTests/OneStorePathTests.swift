import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

@testable import LongLinkRedis

/// A server on its own (``InMemoryPushStore``) and a server of a fleet (``RedisPushStore``) run one
/// push path: the same `push(to:)`, pump, acks by epoch and `Sync`, seen from a raw client.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct OneStorePathTests {
    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case memory, redis
        var testDescription: String { rawValue }
    }

    @Test(arguments: Store.allCases)
    func pushAckAndSyncBehaveAlike(_ kind: Store) async throws {
        try await withRedisServer { redis in
            var redisConfiguration = redis.configuration
            redisConfiguration.keyPrefix = "one-path-\(UInt32.random(in: 0...UInt32.max)):"
            let store: any PushStore =
                kind == .memory ? InMemoryPushStore() : try RedisPushStore(configuration: redisConfiguration)
            let router: @Sendable () -> Router = {
                var router = Router()
                router.register("login") { payload, context in
                    context.bind(principal: String(decoding: payload, as: UTF8.self))
                    return []
                }
                return router
            }
            let member = LongLinkTestServer(stores: { ServerStores(pushes: store) }, router: router)
            _ = try await member.start()
            let server = try #require(member.server)
            let client = try await AckingClient.loggedIn(to: try member.endpoint, as: "dana")
            for n in 1...3 { _ = try await server.push(to: "dana", topic: "news", payload: bytes("\(n)")) }
            var pushes: [Frame.Push] = []
            for _ in 1...3 { pushes.append(try await client.nextPush()) }
            #expect(pushes.map(\.seq) == [1, 2, 3])
            let epoch = pushes[0].epoch
            #expect(epoch != 0)

            // An ack of another epoch deletes nothing; the right one deletes what it names.
            try await client.send([.ack(Frame.Ack(seqs: [1, 2, 3], epoch: epoch &+ 1))])
            try await client.send([.ack(Frame.Ack(seqs: [1, 2], epoch: epoch))])
            try await client.barrier(nonce: 1)
            try await eventually("the acks reach the store") {
                (try? await store.unacknowledged(PushRead(principal: "dana", after: 0, limit: 10)).map(\.seq)) == [3]
            }

            // Sync sends again what is left, from the first unacknowledged push.
            try await client.send([.sync(Frame.Sync())])
            let again = try await client.nextPush()
            #expect(again.seq == 3 && again.epoch == epoch && again.payload == bytes("3"))

            client.close()
            await member.stop()
        }
    }
}
