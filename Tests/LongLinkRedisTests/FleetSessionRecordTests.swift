import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import Testing

@testable import LongLinkRedis

/// Exclusive logins in a fleet hold when their notice is lost: the record each one leaves in
/// Redis is read by the servers.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetSessionRecordTests {
    /// The tablet's exclusive login elsewhere left its record, but its notice never went out (as
    /// when the publish is lost, or the server's subscription was not confirmed yet): the phone's
    /// older session on s0 still ends, within the check's bound.
    @Test func anExclusiveLoginWhoseNoticeIsLostStillEndsTheOlderSession() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis, count: 1)
            var configuration = ClientConfiguration.forRedisFleet([fleet.endpoints[0]], user: "hal")
            configuration.clientID = "phone"
            let phone = LongLinkClient(configuration: configuration)
            let (run, ended) = running(phone)
            #expect(try await phone.request("server") == bytes("s0"))
            // The tablet logs in a second after the phone. A login within a check's own latency of
            // the phone's keeps the phone by design (which came first is unknown), and on a loaded
            // machine that latency can exceed the few milliseconds a request takes.
            try await Task.sleep(for: .seconds(1))

            // Written now, by Redis's clock, as the announcing script does.
            let record = RedisKeys(prefix: fleet.prefix).session(principal: "hal")
            let time = try await fleet.counter.run(RedisCommand("TIME"))
            let now = try #require(RedisPushStore.microseconds(fromTime: time))
            _ = try await fleet.counter.run(RedisCommand("SET", record, "\(now):tablet", "PX", "60000"))
            let start = ContinuousClock.now
            let error = try await ended.next(within: .seconds(10), "the phone's run() to end")
            #expect(error?.code == .goAway)
            #expect(error?.message.contains("logged in elsewhere") == true)
            // The check runs every second; the record would last 60 s. Room for a loaded machine.
            #expect(ContinuousClock.now - start < .seconds(10))
            #expect(try fleet.server(0).statistics.sessionsReplaced == 1)
            phone.shutdown()
            _ = await run.result
            await fleet.stop()
        }
    }

    /// An exclusive login's announcement leaves the record the servers read, with a lifetime.
    @Test func announcingASessionRecordsItsClientForAWhile() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            #expect(try await store.sessionRecords(of: ["ivy", "jo"]).isEmpty)
            try await store.announceSession(SessionAnnouncement(principal: "ivy", clientID: "tablet"))
            let records = try await store.sessionRecords(of: ["ivy", "jo"])
            #expect(records.map(\.principal) == ["ivy"])
            #expect(records.first?.clientID == "tablet")
            #expect((records.first?.age ?? .seconds(99)) < .seconds(5))
            let ttl = try await store.client.run(
                RedisCommand("PTTL", RedisKeys(prefix: redis.configuration.keyPrefix).session(principal: "ivy")))
            #expect((1...60_000).contains(ttl.int64 ?? 0))
            await store.shutdown()
        }
    }
}
