import Foundation
import LongLinkCLISupport
import LongLinkRedis
import LongLinkServer

/// `serve`'s Redis: where its URL is read from, and the check that it answers.
extension ServeCommand {
    /// The environment variable read for the Redis URL when no option gives one.
    static let redisURLVariable = "LONGLINK_REDIS_URL"

    /// The Redis of `--redis`, `--redis-url-file` or `LONGLINK_REDIS_URL` (in that order), with
    /// `--redis-ca` and `--redis-prefix`; nil without a URL. Errors say where the URL came from,
    /// never the URL: it may hold the password.
    static func redisConfiguration(
        _ arguments: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> RedisConfiguration? {
        let source: String
        let url: String
        switch (arguments.value("redis"), arguments.value("redis-url-file")) {
        case (_?, _?):
            throw UsageError("--redis and --redis-url-file both give the Redis URL: use one")
        case (let text?, nil):
            (source, url) = ("--redis", text)
        case (nil, let path?):
            source = "--redis-url-file \(path)"
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw UsageError("\(source): cannot read the file")
            }
            url = String(contents.split(whereSeparator: \.isNewline).first ?? "")
                .trimmingCharacters(in: .whitespaces)
        case (nil, nil):
            guard let text = environment[redisURLVariable], !text.isEmpty else {
                for option in ["redis-prefix", "redis-ca"] where arguments.value(option) != nil {
                    throw UsageError("--\(option) needs --redis, --redis-url-file or \(redisURLVariable)")
                }
                return nil
            }
            (source, url) = (redisURLVariable, text)
        }
        var configuration: RedisConfiguration
        do {
            configuration = try RedisConfiguration(url: url)
            if let prefix = arguments.value("redis-prefix") { configuration.keyPrefix = prefix }
            if let ca = arguments.value("redis-ca") {
                guard configuration.tls != nil else { throw UsageError("--redis-ca needs a rediss:// URL") }
                configuration.tls?.trustRoots = .pemFile(ca)
            }
            try configuration.validate()
        } catch let error as UsageError {
            throw error
        } catch let error as LongLinkError {
            throw UsageError("the Redis URL of \(source): \(error.message)")
        } catch {
            throw UsageError("the Redis URL of \(source): \(error)")
        }
        return configuration
    }

    /// Says on standard error when Redis does not answer at start (the server runs on, failing
    /// reliable pushes and requests with UNAVAILABLE until it does), and when it answers again.
    static func warnIfUnreachable(_ redis: RedisConfiguration) async {
        // Only plain TCP to an IPv4 address is checked; TLS and host names are left to the
        // server's Redis client, whose errors say what failed.
        guard redis.tls == nil, RedisPing.answers(host: redis.host, port: redis.port) == false else { return }
        Terminal.standardError.line(
            "longlink serve: Redis at \(redis) does not answer; reliable pushes and requests "
                + "fail UNAVAILABLE until it does")
        while RedisPing.answers(host: redis.host, port: redis.port) == false {
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
        }
        Terminal.standardError.line("longlink serve: Redis at \(redis) answers")
    }
}
