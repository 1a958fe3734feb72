import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

@testable import LongLinkRedis

/// ``LongLinkServer/ServerStores/redis(_:capacityPerPrincipal:bytesPerPrincipal:)``: the server's
/// fleet stores, made on one Redis configuration.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisFleetStoresTests {
    @Test func fleetStoresOnRedisAreTheRedisStores() async throws {
        try await withRedisServer { redis in
            let fleet = try ServerStores.redis(redis.configuration, capacityPerPrincipal: 2, bytesPerPrincipal: 100)
            let pushes = try #require(fleet.pushes as? RedisPushStore)
            #expect(pushes.capacityPerPrincipal == 2 && pushes.bytesPerPrincipal == 100)
            let dedupe = try #require(fleet.dedupe)
            #expect(dedupe is RedisDedupeStore)
            #expect(try await fleet.pushes.append(PushAppend(principal: "p", topic: "t", payload: [])).seq == 1)
            await fleet.pushes.shutdown()
            await dedupe.shutdown()
            do throws(LongLinkError) {
                _ = try await fleet.pushes.append(PushAppend(principal: "p", topic: "t", payload: []))
                Issue.record("a push was stored after shutdown")
            } catch {
                #expect(error.code == .shutdown)
            }
        }
    }

    struct PriceAlert: Codable, Equatable {
        var alertID: Int
    }

    /// The one producer call works on a server whose stores are Redis's (the synchronous
    /// `push(to:)` threw `FAILED_PRECONDITION` there, beside an async `publish`): raw and typed
    /// pushes are stored in Redis and delivered.
    @Test func pushToOnAServerOnRedisStoresAndDelivers() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.keyPrefix = "push-to-\(UInt32.random(in: 0...UInt32.max)):"
            let redisConfiguration = configuration
            let member = LongLinkTestServer(stores: { try .redis(redisConfiguration) }) {
                var router = Router()
                router.register("login") { payload, context in
                    context.bind(principal: String(decoding: payload, as: UTF8.self))
                    return []
                }
                return router
            }
            _ = try await member.start()
            let server = try #require(member.server)
            let client = try await AckingClient.loggedIn(to: try member.endpoint, as: "rita")
            #expect(try await server.push(to: "rita", topic: "alerts", payload: bytes("raw")) == 1)
            #expect(try await server.push(to: "rita", topic: "alerts", message: PriceAlert(alertID: 2)) == 2)
            let raw = try await client.nextPush()
            #expect(raw.seq == 1 && raw.payload == bytes("raw"))
            let typed = try await client.nextPush()
            #expect(typed.seq == 2)
            #expect(try JSONPayloadCodec().decode(PriceAlert.self, from: typed.payload) == PriceAlert(alertID: 2))
            #expect(server.statistics.reliablePushesStored == 2)
            client.close()
            await member.stop()
        }
    }
}
