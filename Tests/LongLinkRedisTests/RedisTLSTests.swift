import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// URLs with TLS and credentials, and the password kept out of every text.
@Suite(.sharedMachine) struct RedisURLTests {
    @Test func redissAndCredentialsParse() throws {
        let tls = try RedisConfiguration(url: "rediss://app:s%3Acret@cache.example:6380/2")
        #expect(tls.tls == TLSConfiguration() && tls.host == "cache.example" && tls.port == 6380)
        #expect(tls.username == "app" && tls.password == "s:cret" && tls.database == 2)
        let plain = try RedisConfiguration(url: "redis://app:pw@h")
        #expect(plain.tls == nil && plain.username == "app" && plain.password == "pw")
        let defaultUser = try RedisConfiguration(url: "redis://:pw@h:1")
        #expect(defaultUser.username == nil && defaultUser.password == "pw")
        #expect(try RedisConfiguration(url: "REDISS://h").tls != nil)
    }

    @Test func descriptionsAndParseErrorsNeverShowThePassword() throws {
        let secret = "hunter2-\(UInt32.random(in: 0...UInt32.max))"
        var configuration = try RedisConfiguration(url: "rediss://app:\(secret)@10.0.0.5:6380/3")
        configuration.tls?.trustRoots = .pemFile("/etc/redis/ca.pem")
        #expect(configuration.description == "rediss://app:***@10.0.0.5:6380/3")
        #expect(configuration.debugDescription.contains("rediss://app:***@10.0.0.5:6380/3"))
        #expect(configuration.debugDescription.contains("CA file /etc/redis/ca.pem"))
        for text in [
            configuration.description, configuration.debugDescription, String(describing: configuration),
            String(reflecting: configuration), "\(configuration)",
        ] {
            #expect(!text.contains(secret), "\(text)")
        }
        #expect(try RedisConfiguration(url: "redis://:\(secret)@[::1]:7000").description == "redis://:***@[::1]:7000")
        // URLs that do not parse, each holding the password where a mistake puts it.
        for bad in [
            "redis://app:\(secret)", "redis://app:\(secret)/1", "redis://h:1/\(secret)", "redis://app:\(secret)%zz@h",
            "http://app:\(secret)@h", "rediss://app:\(secret)@h:\(secret)",
        ] {
            do throws(LongLinkError) {
                _ = try RedisConfiguration(url: bad)
                Issue.record("\(bad) parsed")
            } catch {
                #expect(error.code == .invalidConfiguration)
                #expect(!error.description.contains(secret) && !error.message.contains(secret), "\(error)")
            }
        }
    }

    @Test func aLoginRefusalNamesTheUserAndHidesThePasswordRedisEchoes() throws {
        var configuration = RedisConfiguration(host: "10.0.0.5", port: 6380)
        configuration.username = "app"
        configuration.password = "pw-echoed"
        // What a Redis without HELLO answers: its arguments, the password among them.
        let error = LongLinkError.redisLoginRefused(
            Array("ERR unknown command 'HELLO', with args beginning with: '3' 'AUTH' 'app' 'pw-echoed'".utf8),
            configuration: configuration)
        #expect(error.message.contains("user 'app'") && error.message.contains("10.0.0.5:6380"))
        #expect(!error.description.contains("pw-echoed"))
        #expect(!String(describing: error.underlying.map { "\($0)" }).contains("pw-echoed"))
    }
}

/// The fleet stores against a redis-server that speaks only TLS, as an ACL user.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisTLSTests {
    @Test func theFleetStoresWorkOverVerifiedTLSAsTheACLUser() async throws {
        try await withRedisTLSServer { redis in
            let client = RedisClient(configuration: redis.configuration)
            #expect(try await client.run(RedisCommand("ACL", "WHOAMI")).string == RedisTLSServer.user)
            // The notices' connection (pub/sub) logs in over TLS too.
            let events = Mailbox<RedisSubscriber.Event>()
            let subscriber = RedisSubscriber(configuration: redis.configuration, channels: ["n"]) { events.put($0) }
            await subscriber.start()
            #expect(try await events.next(within: .seconds(5)) == .subscribed)
            _ = try await client.run(RedisCommand("PUBLISH", "n", "hi"))
            #expect(try await events.next(within: .seconds(5)) == .message(channel: "n", payload: Array("hi".utf8)))
            await subscriber.shutdown()
            await client.shutdown()

            var configuration = redis.configuration
            configuration.keyPrefix = "tls:"
            let pushes = try RedisPushStore(configuration: configuration)
            let stored = try await pushes.append(PushAppend(principal: "alice", topic: "t", payload: [1, 2, 3]))
            #expect(
                try await pushes.unacknowledged(PushRead(principal: "alice", after: 0, limit: 10)).map(\.seq) == [
                    stored.seq
                ])
            try await pushes.acknowledge(AcknowledgedPushes(principal: "alice", seqs: [stored.seq]))
            #expect(try await pushes.unacknowledgedCount(principal: "alice") == 0)
            await pushes.shutdown()

            let window = try RedisDedupeStore(configuration: configuration)
            let first = try await window.begin(
                DedupeClaimRequest(
                    principal: "alice", clientID: "c", requestID: "1", runningFor: .seconds(5)))
            #expect(first == .run)
            let again = try await window.begin(
                DedupeClaimRequest(
                    principal: "alice", clientID: "c", requestID: "1", runningFor: .seconds(5)))
            #expect(again == .running)
            await window.shutdown()
        }
    }

    @Test func aWrongPasswordIsATypedErrorNamingTheUserNotThePassword() async throws {
        try await withRedisTLSServer { redis in
            let wrong = "not-the-password-\(UInt32.random(in: 0...UInt32.max))"
            var configuration = redis.configuration
            configuration.password = wrong
            let pushes = try RedisPushStore(configuration: configuration)
            do throws(LongLinkError) {
                _ = try await pushes.append(PushAppend(principal: "alice", topic: "t", payload: [1]))
                Issue.record("a wrong password was accepted")
            } catch {
                #expect(error.code == .unauthenticated, "\(error)")
                #expect(error.message.contains("user '\(RedisTLSServer.user)'"), "\(error)")
                #expect((error.underlying as? RedisServerError)?.prefix == "WRONGPASS")
                for text in [error.description, error.message, String(reflecting: error)] {
                    #expect(!text.contains(wrong) && !text.contains(RedisTLSServer.password), "\(text)")
                }
            }
            await pushes.shutdown()
        }
    }

    @Test func anUntrustedOrMisnamedCertificateFailsWithATLSFailure() async throws {
        try await withRedisTLSServer { redis in
            var untrusted = redis.configuration
            untrusted.tls?.trustRoots = .pemFile(try await TestCertificates.make().otherCACertificate)
            var misnamed = redis.configuration
            // Sent as SNI and checked against the certificate, which names localhost and 127.0.0.1.
            misnamed.tls?.serverHostname = "redis.example"
            for (configuration, reason) in [
                (untrusted, TLSFailure.Reason.untrustedCertificate), (misnamed, .hostnameMismatch),
            ] {
                let window = try RedisDedupeStore(configuration: configuration)
                do throws(LongLinkError) {
                    _ = try await window.begin(
                        DedupeClaimRequest(principal: nil, clientID: "c", requestID: "1", runningFor: .seconds(5)))
                    Issue.record("connected despite \(reason)")
                } catch {
                    #expect(error.code == .tlsFailure, "\(error)")
                    #expect((error.underlying as? TLSFailure)?.reason == reason, "\(error)")
                    #expect(error.message.contains("Redis at 127.0.0.1:\(redis.port)"), "\(error)")
                }
                await window.shutdown()
            }
        }
    }

    @Test func aMissingCAFileIsSaidWhenTheStoreIsMade() throws {
        var configuration = RedisConfiguration(host: "127.0.0.1", port: 6380)
        configuration.tls = TLSConfiguration()
        configuration.tls?.trustRoots = .pemFile("/nonexistent/redis-ca.pem")
        #expect(throws: LongLinkError.self) { try RedisPushStore(configuration: configuration) }
        do throws(LongLinkError) {
            try configuration.validate()
            Issue.record("a missing CA file was accepted")
        } catch {
            #expect(error.code == .invalidConfiguration)
        }
    }
}
