import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// A listener of the test's own playing a broken Redis: it answers whatever arrives with fixed
/// bytes, or not at all.
final class ScriptedRedis: ConnectionHandler, @unchecked Sendable {
    let answer: [UInt8]?

    init(answer: [UInt8]?) {
        self.answer = answer
    }

    func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
        if let answer { connection.write(answer) }
    }

    func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {}
}

@Suite(.sharedMachine) struct HostileRedisTests {
    func configuration(for answer: [UInt8]?) async throws -> (RedisConfiguration, Listener) {
        let listener = try await Listener.bind(to: .tcp(host: "127.0.0.1", port: 0)) { connection in
            connection.start(handler: ScriptedRedis(answer: answer))
        }
        var configuration = RedisConfiguration(host: "127.0.0.1", port: listener.localAddress.port!)
        configuration.connectTimeout = .milliseconds(300)
        configuration.commandTimeout = .milliseconds(300)
        return (configuration, listener)
    }

    @Test func hostileBytesFailTheCommandTypedAndCloseTheConnection() async throws {
        let (configuration, listener) = try await configuration(for: bytes("*99999999\r\n"))
        let client = RedisClient(configuration: configuration)
        do throws(LongLinkError) {
            _ = try await client.run(RedisCommand("PING"))
            Issue.record("a hostile reply was accepted")
        } catch {
            #expect(error.code == .unavailable, "\(error)")
            let cause = try #require(error.underlying as? LongLinkError)
            #expect(cause.code == .protocolViolation)
            #expect((cause.underlying as? RESPParseError)?.reason == .aggregateTooLarge(99_999_999))
        }
        await client.shutdown()
        listener.close()
    }

    @Test func aSilentServerFailsWithinTheTimeoutThenTheBackoffFailsFast() async throws {
        var (configuration, listener) = try await configuration(for: nil)
        // A backoff no slow machine outlasts between the two calls.
        configuration.initialReconnectDelay = .seconds(60)
        configuration.maximumReconnectDelay = .seconds(60)
        let client = RedisClient(configuration: configuration)
        let started = ContinuousClock.now
        do throws(LongLinkError) {
            _ = try await client.run(RedisCommand("PING"))
            Issue.record("a silent server answered")
        } catch {
            #expect(error.code == .unavailable, "\(error)")
        }
        // Bounded by the 300 ms timeouts, not hung: generous, for a machine running the whole suite.
        #expect(ContinuousClock.now - started < .seconds(20))
        // Within the backoff after the failed handshake, the next command does not try again.
        do throws(LongLinkError) {
            _ = try await client.run(RedisCommand("PING"))
            Issue.record("a silent server answered")
        } catch {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("backoff"), "\(error)")
        }
        await client.shutdown()
        listener.close()
    }
}
