import LongLink
import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// A fleet whose Redis is briefly away: a request waits for it within its deadline and runs once;
/// one whose deadline comes first is answered `UNAVAILABLE` just before it, not run.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetStoreRetryTests {
    /// Redis stops answering (SIGSTOP) as a request arrives: its claim times out and is made again
    /// until Redis answers (after the claim has failed at least once); the request is answered
    /// within its 10 s deadline, its handler run once.
    @Test func aRequestWaitsForAPausedRedisAndRunsOnce() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "rita") { (client: LongLinkClient) async throws in
                let server = try fleet.server(0)
                let before = server.statistics
                redis.pause()
                let call = Task {
                    try await client.request(
                        "slow", payload: bytes("waited"), options: RequestOptions(timeout: .seconds(10)))
                }
                let retried = await Self.held(within: .seconds(8)) {
                    server.statistics.storeCallsRetried > before.storeCallsRetried
                }
                redis.resume()
                #expect(retried, "the request's claim was never made again")
                #expect(try await call.value == bytes("s0"))
                #expect(try await fleet.runs("waited") == 1)
                #expect(server.statistics.handlersStarted == before.handlersStarted + 1)
            }
            await fleet.stop()
        }
    }

    /// Redis is gone (killed) for longer than the request's 3 s deadline: its claim is made again
    /// until 200 ms before the deadline, then the request is answered `UNAVAILABLE`, not run.
    @Test func aRequestWhoseDeadlineComesFirstFailsUnavailableWithoutRunning() async throws {
        try await withRedisServer { redis in
            let fleet = try await RedisFleet.start(on: redis)
            try await onFirstServer(fleet, as: "rita") { (client: LongLinkClient) async throws in
                let server = try fleet.server(0)
                let before = server.statistics
                await redis.crash()
                let start = ContinuousClock.now
                await #expect {
                    _ = try await client.request(
                        "slow", payload: bytes("never"), options: RequestOptions(timeout: .seconds(3)))
                } throws: { error in
                    (error as? LongLinkError)?.code == .unavailable
                }
                // Answered only once the retries were out of time: not at the first failure.
                #expect(ContinuousClock.now - start > .seconds(2))
                #expect(server.statistics.storeCallsRetried > before.storeCallsRetried)
                #expect(server.statistics.handlersStarted == before.handlersStarted)
                try await redis.relaunchWithoutPersistence()
                try await eventually("requests run again") {
                    (try? await client.request("slow", payload: bytes("after"))) == bytes("s0")
                }
            }
            await fleet.stop()
        }
    }

    /// Whether `condition` held within `timeout` (polled: the server's counters have nothing to await).
    static func held(within timeout: Duration, _ condition: () -> Bool) async -> Bool {
        (try? await eventually("the condition", within: timeout) { condition() }) != nil
    }
}
