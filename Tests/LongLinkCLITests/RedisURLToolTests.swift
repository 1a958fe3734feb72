import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import longlink

/// Where `serve` reads the Redis URL from, and that it never prints the password.
@Suite("longlink serve: the Redis URL and its password", .sharedMachine)
struct RedisURLToolTests {
    private func parse(_ arguments: [String]) throws -> ParsedArguments {
        try ArgumentParser.parse(["--port", "0"] + arguments, for: ServeCommand.spec)
    }

    @Test func aURLThatDoesNotParseIsAUsageErrorWithoutThePassword() async throws {
        let secret = "pa55-\(UInt32.random(in: 0...UInt32.max))"
        for arguments in [
            ["--redis", "rediss://app:\(secret)@127.0.0.1:port\(secret)"],
            ["--redis", "redis://app:\(secret)"],
            ["--redis", "redis://app:\(secret)@127.0.0.1:6379/\(secret)"],
            ["--redis", "http://app:\(secret)@127.0.0.1:6379"],
            ["--redis", "rediss://app:\(secret)@127.0.0.1:6380", "--redis-ca", "/nonexistent/\(UUID()).pem"],
        ] {
            let outcome = try await ToolProcess.run(["serve", "--port", "0"] + arguments)
            #expect(outcome.status == ExitStatus.usage, "\(arguments): \(outcome.standardError)")
            #expect(outcome.standardError.contains("the Redis URL of --redis"), "\(outcome.standardError)")
            #expect(!outcome.standardError.contains(secret), "\(outcome.standardError)")
            #expect(!outcome.standardOutput.contains(secret))
        }
    }

    @Test func theURLComesFromTheOptionTheFileOrTheEnvironment() throws {
        let environment = [ServeCommand.redisURLVariable: "rediss://env:pw-env@10.0.0.1:6380/1"]
        let fromEnvironment = try #require(try ServeCommand.redisConfiguration(parse([]), environment: environment))
        #expect(fromEnvironment.username == "env" && fromEnvironment.password == "pw-env")
        #expect(fromEnvironment.tls != nil && fromEnvironment.port == 6380 && fromEnvironment.database == 1)
        #expect(try ServeCommand.redisConfiguration(parse([]), environment: [:]) == nil)

        let file = NSTemporaryDirectory() + "longlink-redis-url-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: file) }
        try Data("  redis://file:pw-file@10.0.0.2:6381  \nignored\n".utf8).write(to: URL(fileURLWithPath: file))
        let fromFile = try #require(
            try ServeCommand.redisConfiguration(parse(["--redis-url-file", file]), environment: environment))
        #expect(fromFile.username == "file" && fromFile.password == "pw-file" && fromFile.host == "10.0.0.2")
        #expect(fromFile.tls == nil)

        let fromOption = try #require(
            try ServeCommand.redisConfiguration(
                parse(["--redis", "redis://opt:pw-opt@10.0.0.3"]), environment: environment))
        #expect(fromOption.username == "opt" && fromOption.host == "10.0.0.3")

        #expect(throws: UsageError.self) {
            try ServeCommand.redisConfiguration(
                parse(["--redis", "redis://10.0.0.3", "--redis-url-file", file]), environment: [:])
        }
        #expect(throws: UsageError.self) {
            try ServeCommand.redisConfiguration(
                parse(["--redis-url-file", file + ".missing"]), environment: [:])
        }
    }

    @Test func redisCASetsTheTrustRootsOfARedissURLOnly() async throws {
        let certificates = try await TestCertificates.make()
        let configuration = try #require(
            try ServeCommand.redisConfiguration(
                parse(["--redis", "rediss://127.0.0.1:6380", "--redis-ca", certificates.caCertificate]),
                environment: [:]))
        #expect(configuration.tls?.trustRoots == .pemFile(certificates.caCertificate))
        #expect(configuration.tls?.certificateVerification == .fullVerification)
        #expect(throws: UsageError.self) {
            try ServeCommand.redisConfiguration(
                parse(["--redis", "redis://127.0.0.1:6380", "--redis-ca", certificates.caCertificate]),
                environment: [:])
        }
        #expect(throws: UsageError.self) {
            try ServeCommand.redisConfiguration(parse(["--redis-ca", certificates.caCertificate]), environment: [:])
        }
    }
}
