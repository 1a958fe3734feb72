import Foundation
import LongLinkCLISupport
import LongLinkRedis
import LongLinkServer

/// `serve`'s Redis: where its URL is read from, and the check that it answers.
extension ServeCommand {
    /// The environment variable read for the Redis URL when no option gives one.
    static let redisURLVariable = "LONGLINK_REDIS_URL"
    /// The environment variable read for the Redis Cluster's URLs when no option gives a URL.
    static let redisClusterURLVariable = "LONGLINK_REDIS_CLUSTER_URL"

    /// Where one kind of Redis URL is given: an option, a file option and an environment variable.
    private struct URLSource {
        var option: String
        var fileOption: String
        var variable: String
    }

    private static let singleSource = URLSource(
        option: "redis", fileOption: "redis-url-file", variable: redisURLVariable)
    private static let clusterSource = URLSource(
        option: "redis-cluster", fileOption: "redis-cluster-url-file", variable: redisClusterURLVariable)

    /// The Redis of `--redis`, `--redis-url-file` or `LONGLINK_REDIS_URL` (in that order), with
    /// `--redis-ca`, `--redis-prefix` and `--redis-durability`; nil without a URL. Errors say where
    /// the URL came from, never the URL: it may hold the password.
    static func redisConfiguration(
        _ arguments: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> RedisConfiguration? {
        guard case .single(let configuration)? = try redis(arguments, environment: environment) else { return nil }
        return configuration
    }

    /// The fleet's Redis: one (`--redis`, `--redis-url-file`, `LONGLINK_REDIS_URL`) or a cluster
    /// (`--redis-cluster`, `--redis-cluster-url-file`, `LONGLINK_REDIS_CLUSTER_URL`: URLs separated
    /// by commas), never both; options before the environment. Nil without any URL.
    static func redis(
        _ arguments: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> ServeRedis? {
        let durability = try redisDurability(arguments)
        let given = (
            try urlText(singleSource, arguments, environment: nil),
            try urlText(clusterSource, arguments, environment: nil)
        )
        let found: (single: (String, String)?, cluster: (String, String)?)
        switch given {
        case (_?, _?):
            throw UsageError("--redis and --redis-cluster both name where the fleet's Redis is: use one")
        case (nil, nil):
            found = (
                try urlText(singleSource, arguments, environment: environment),
                try urlText(clusterSource, arguments, environment: environment)
            )
            if found.single != nil, found.cluster != nil {
                throw UsageError("both \(redisURLVariable) and \(redisClusterURLVariable) are set: use one")
            }
        default:
            found = given
        }
        if let (source, url) = found.single {
            return .single(try parse(url, source: source, arguments, durability: durability))
        }
        guard let (source, text) = found.cluster else {
            for option in ["redis-prefix", "redis-ca", "redis-durability"] where arguments.value(option) != nil {
                throw UsageError(
                    "--\(option) needs --redis, --redis-url-file, \(redisURLVariable) or their --redis-cluster twins")
            }
            return nil
        }
        let urls = text.split(separator: ",", omittingEmptySubsequences: false)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        var seeds: [RedisConfiguration] = []
        for (index, url) in urls.enumerated() {
            let place = urls.count == 1 ? source : "\(source) (URL \(index + 1) of \(urls.count))"
            guard !url.isEmpty else { throw UsageError("the Redis URL of \(place): empty") }
            seeds.append(try parse(url, source: place, arguments, durability: durability))
        }
        do {
            try RedisConfiguration.validate(cluster: seeds)
        } catch {
            throw UsageError("the Redis Cluster of \(source): \(error.message)")
        }
        return .cluster(seeds)
    }

    /// `--redis-durability`: `asynchronous` or `replicated:N`; nil without the option.
    static func redisDurability(_ arguments: ParsedArguments) throws(UsageError) -> RedisDurability? {
        guard let text = arguments.value("redis-durability") else { return nil }
        if text == "asynchronous" { return .asynchronous }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "replicated", let replicas = Int(parts[1]), (1...64).contains(replicas)
        else {
            throw UsageError("--redis-durability needs asynchronous or replicated:N (N from 1 to 64), not '\(text)'")
        }
        return .replicated(replicas)
    }

    /// The URL text of `source` with where it came from, from its option, its file option or (when
    /// `environment` is given) its variable; nil when none gives one.
    private static func urlText(_ source: URLSource, _ arguments: ParsedArguments, environment: [String: String]?)
        throws(UsageError) -> (source: String, text: String)?
    {
        switch (arguments.value(source.option), arguments.value(source.fileOption)) {
        case (_?, _?):
            throw UsageError("--\(source.option) and --\(source.fileOption) both give the Redis URL: use one")
        case (let text?, nil):
            return ("--\(source.option)", text)
        case (nil, let path?):
            let place = "--\(source.fileOption) \(path)"
            guard let contents = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw UsageError("\(place): cannot read the file")
            }
            let line = String(contents.split(whereSeparator: \.isNewline).first ?? "")
            return (place, line.trimmingCharacters(in: .whitespaces))
        case (nil, nil):
            guard let text = environment?[source.variable], !text.isEmpty else { return nil }
            return (source.variable, text)
        }
    }

    /// One URL with `--redis-prefix`, `--redis-ca` and the durability applied, validated.
    private static func parse(
        _ url: String, source: String, _ arguments: ParsedArguments, durability: RedisDurability?
    ) throws(UsageError) -> RedisConfiguration {
        var configuration: RedisConfiguration
        do {
            configuration = try RedisConfiguration(url: url)
            if let prefix = arguments.value("redis-prefix") { configuration.keyPrefix = prefix }
            if let ca = arguments.value("redis-ca") {
                guard configuration.tls != nil else { throw UsageError("--redis-ca needs a rediss:// URL") }
                configuration.tls?.trustRoots = .pemFile(ca)
            }
            if let durability { configuration.durability = durability }
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
    static func warnIfUnreachable(_ redis: ServeRedis) async {
        // Only plain TCP to IPv4 addresses is checked; TLS and host names are left to the
        // server's Redis client, whose errors say what failed. A cluster answers when any seed does.
        let nodes = redis.nodes.filter { $0.tls == nil }
        func silent() -> Bool {
            nodes.allSatisfy { RedisProbe.answers(host: $0.host, port: $0.port) == false }
        }
        guard !nodes.isEmpty, nodes.count == redis.nodes.count, silent() else { return }
        Terminal.standardError.line(
            "longlink serve: \(redis) does not answer; reliable pushes and requests fail UNAVAILABLE until it does")
        while silent() {
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
        }
        Terminal.standardError.line("longlink serve: \(redis) answers")
    }
}
