import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// The client's pure parts: URLs, backoff, error replies.
@Suite(.sharedMachine) struct RedisClientUnitTests {
    @Test func urlsParse() throws {
        let plain = try RedisConfiguration(url: "redis://cache.local")
        #expect(plain.host == "cache.local" && plain.port == 6379 && plain.database == 0 && plain.password == nil)
        let full = try RedisConfiguration(url: "redis://app:p%40ss@10.0.0.5:6380/3")
        #expect(full.host == "10.0.0.5" && full.port == 6380 && full.database == 3)
        #expect(full.username == "app" && full.password == "p@ss")
        let passwordOnly = try RedisConfiguration(url: "redis://:secret@h:1")
        #expect(passwordOnly.username == nil && passwordOnly.password == "secret")
        let ipv6 = try RedisConfiguration(url: "redis://[::1]:7000/")
        #expect(ipv6.host == "::1" && ipv6.port == 7000)
        for bad in [
            "http://h:1", "redis://", "redis://h:0", "redis://h:x", "redis://h:1/-1", "redis://[::1", "redis://u:%zz@h",
        ] {
            do throws(LongLinkError) {
                _ = try RedisConfiguration(url: bad)
                Issue.record("\(bad) parsed")
            } catch {
                #expect(error.code == .invalidConfiguration, "\(bad)")
            }
        }
    }

    @Test func backoffDoublesUpToTheMaximumWithJitterAndResets() {
        var backoff = ReconnectBackoff(initial: .milliseconds(50), maximum: .seconds(1))
        #expect(
            (0...7).map { backoff.delay(afterFailures: $0) } == [
                .zero, .milliseconds(50), .milliseconds(100), .milliseconds(200), .milliseconds(400),
                .milliseconds(800),
                .seconds(1), .seconds(1),
            ])
        let start = ContinuousClock.now
        #expect(backoff.permitsAttempt(at: start))
        backoff.failed(at: start, jitter: 1)
        #expect(!backoff.permitsAttempt(at: start + .milliseconds(49)))
        #expect(backoff.permitsAttempt(at: start + .milliseconds(50)))
        backoff.failed(at: start, jitter: 0.5)
        #expect(!backoff.permitsAttempt(at: start + .milliseconds(49)))
        #expect(backoff.permitsAttempt(at: start + .milliseconds(50)))
        backoff.succeeded()
        #expect(backoff.permitsAttempt(at: start) && backoff.failures == 0)
        #expect(backoff.delay(afterFailures: 10_000) == .seconds(1))
    }

    @Test func errorRepliesCarryTheServersPrefix() {
        let error = LongLinkError.redisReply(
            bytes("WRONGTYPE Operation against a key holding the wrong kind of value"), command: "XADD")
        #expect(error.code == .internalError)
        #expect(
            (error.underlying as? RedisServerError)
                == RedisServerError(
                    prefix: "WRONGTYPE", message: "Operation against a key holding the wrong kind of value"))
        #expect(LongLinkError.redisReply(bytes("LOADING Redis is loading"), command: "GET").code == .unavailable)
        #expect(LongLinkError.redisReply(bytes("WRONGPASS invalid"), command: "HELLO").code == .unauthenticated)
        #expect(RedisServerError(reply: "no prefix here") == RedisServerError(prefix: "", message: "no prefix here"))
    }

    /// What passes (a failover, a node loading, a slot moving) is `unavailable`, which the server
    /// retries within a request's deadline; what does not is another code, answered at once.
    @Test func errorRepliesThatPassAreUnavailableTheOthersFinal() {
        for reply in [
            "LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script",
            "MASTERDOWN Link with MASTER is down", "READONLY You can't write against a read only replica.",
            "TRYAGAIN Multiple keys request during rehashing of slot", "CLUSTERDOWN The cluster is down",
            "NOREPLICAS Not enough good replicas to write.", "OOM command not allowed when used memory > 'maxmemory'.",
        ] {
            #expect(LongLinkError.redisReply(bytes(reply), command: "EVALSHA").code == .unavailable, "\(reply)")
        }
        for reply in [
            "ERR unknown command", "WRONGTYPE Operation against a key holding the wrong kind of value",
            "NOSCRIPT No matching script", "MOVED 3999 127.0.0.1:6381", "EXECABORT Transaction discarded",
        ] {
            #expect(LongLinkError.redisReply(bytes(reply), command: "EVALSHA").code == .internalError, "\(reply)")
        }
        #expect(LongLinkError.redisReply(bytes("NOPERM no permissions"), command: "EVALSHA").code == .unauthenticated)
        #expect(LongLinkError.redisUnavailable("the Redis connection closed").code == .unavailable)
    }
}

/// The client against a real redis-server.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisClientTests {
    @Test func pipelinedCommandsGetTheirRepliesInOrder() async throws {
        try await withRedisServer { redis in
            let client = RedisClient(configuration: redis.configuration)
            let replies = try await client.send((0..<500).map { _ in RedisCommand("INCR", "n") })
            #expect(replies == (1...500).map { RESPValue.integer(Int64($0)) })
            // Many callers at once on one connection: each gets its own reply.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        let key = "k\(index)"
                        _ = try await client.run(RedisCommand("SET", key, String(index)))
                        #expect(try await client.run(RedisCommand("GET", key)).string == String(index))
                    }
                }
                try await group.waitForAll()
            }
            // An error reply fails its command only.
            let mixed = try await client.send([
                RedisCommand("SET", "s", "x"), RedisCommand("INCR", "s"), RedisCommand("GET", "s"),
            ])
            #expect(mixed[0].string == "OK" && mixed[1].errorText != nil && mixed[2].string == "x")
            await client.shutdown()
        }
    }

    @Test func helloAuthenticatesAndSelectsTheDatabase() async throws {
        try await withRedisServer { redis in
            let admin = RedisClient(configuration: redis.configuration)
            _ = try await admin.run(RedisCommand("ACL", "SETUSER", "app", "on", ">s3cret", "~*", "+@all"))
            await admin.shutdown()

            var configuration = try RedisConfiguration(url: "redis://app:s3cret@127.0.0.1:\(redis.port)/2")
            configuration.commandTimeout = .seconds(2)
            let client = RedisClient(configuration: configuration)
            #expect(try await client.run(RedisCommand("ACL", "WHOAMI")).string == "app")
            _ = try await client.run(RedisCommand("SET", "in2", "yes"))
            let info = try await client.run(RedisCommand("CLIENT", "INFO")).string ?? ""
            #expect(info.contains("db=2") && info.contains("resp=3"))
            await client.shutdown()

            configuration.password = "wrong"
            let refused = RedisClient(configuration: configuration)
            do throws(LongLinkError) {
                _ = try await refused.run(RedisCommand("PING"))
                Issue.record("a wrong password was accepted")
            } catch {
                // The handshake's refusal, typed, with Redis's prefix as the cause.
                #expect(error.code == .unauthenticated, "\(error)")
                #expect((error.underlying as? RedisServerError)?.prefix == "WRONGPASS")
            }
            await refused.shutdown()
        }
    }

    @Test func aStoppedRedisFailsFastThenTheClientReconnects() async throws {
        try await withRedisServer { redis in
            let client = RedisClient(configuration: redis.configuration)
            _ = try await client.run(RedisCommand("SET", "a", "1"))
            try await redis.restartWithoutPersistence()
            // The old connection is gone; the next command meets it closed or reconnects.
            try await eventually("the client reconnects", within: .seconds(10)) {
                (try? await client.run(RedisCommand("GET", "a"))) == .null
            }
            await client.shutdown()
            do throws(LongLinkError) {
                _ = try await client.run(RedisCommand("PING"))
                Issue.record("a shut-down client ran a command")
            } catch {
                #expect(error.code == .shutdown)
            }
        }
    }
}
