import LongLinkServer
import LongLinkTestSupport
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
}
