import BenchCLISupport

/// Redis's `PING` through `redis-benchmark`, the peer beside `rpc` and `server`: a `redis-server`
/// of the run's own (as `fleet` starts it) measured in the same run as LongLink, alternating.
///
/// `PING` is the least work Redis does per request, so the rows compare LongLink's per-request
/// cost with a mature single-threaded server's on the same machine and loopback: one connection
/// without pipelining for one request in flight, one connection pipelining 64 for the server at 64.
/// Optional: without the binaries (or when Redis does not start) the rows are skipped with a note.
final class RedisPing {
    private let tools: RedisTools
    private let server: LocalRedisServer
    /// LongLink's rates and Redis's, one pair per run.
    typealias Samples = (ours: [Double], redis: [Double])

    /// A first short run's rate per pipeline depth, which sizes each measurement to `--duration`.
    private var trialRates: [Int: Double] = [:]

    private init(tools: RedisTools, server: LocalRedisServer) {
        self.tools = tools
        self.server = server
    }

    /// Runs `body` with Redis started (nil when it cannot be: the reason is appended to `notes` and
    /// printed), and stops Redis afterwards, also when `body` throws.
    static func with<Value>(
        _ scenario: String, _ settings: BenchSettings, notes: inout [String],
        _ body: (RedisPing?) async throws -> Value
    ) async throws -> Value {
        let ping: RedisPing
        switch RedisTools.find(in: settings.redisDirectory, neededBy: "the Redis PING comparison") {
        case .failure(let missing):
            return try await skipped(scenario, "\(missing)", notes: &notes, body)
        case .success(let tools):
            do {
                ping = RedisPing(tools: tools, server: try await LocalRedisServer.start(tools))
            } catch {
                return try await skipped(scenario, "redis-server did not start: \(error)", notes: &notes, body)
            }
        }
        benchProgress("\(scenario): redis-server pid \(ping.server.pid) on port \(ping.server.port) for PING")
        do {
            let value = try await body(ping)
            await ping.server.stop()
            return value
        } catch {
            await ping.server.stop()
            throw error
        }
    }

    private static func skipped<Value>(
        _ scenario: String, _ reason: String, notes: inout [String], _ body: (RedisPing?) async throws -> Value
    ) async throws -> Value {
        let line = "\(scenario): Redis PING rows skipped: \(reason)"
        notes.append(line)
        Terminal.standardError.line("longlink-bench \(line)")
        return try await body(nil)
    }

    /// `PING`s per second on one connection, `pipeline` at a time, for about `--duration`.
    func rate(pipeline: Int, _ settings: BenchSettings) async throws -> Double {
        let trial: Double
        if let known = trialRates[pipeline] {
            trial = known
        } else {
            trial = try await run(pipeline: pipeline, requests: 5_000)
            trialRates[pipeline] = trial
        }
        return try await run(
            pipeline: pipeline, requests: RedisBenchmarkTool.requests(toLast: settings.duration, at: trial))
    }

    private func run(pipeline: Int, requests: Int) async throws -> Double {
        try await RedisBenchmarkTool.run(
            tools, port: server.port, clients: 1, pipeline: pipeline, requests: requests, command: ["PING"]
        ).rate
    }

    /// `rpc`'s row: a LongLinkClient in its default configuration (the card's task-group race) with
    /// one request in flight, against `PING` on one connection without pipelining.
    static func compareRPC(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let samples = try await with("rpc", settings, notes: &report.notes) { redis -> Samples? in
            guard let redis else { return nil }
            return try await withBenchServer { server in
                try await withBenchClient(port: server.port) { bench in
                    try await alternate("rpc: 1 in flight, default design", settings, redis: redis, pipeline: 1) {
                        try await RPCBenchmark.throughput(bench.client, inFlight: 1, settings: settings)
                    }
                }
            }
        }
        guard let samples else { return }
        report.add(
            BenchFigure(
                key: "rpc.redis_ping.in_flight_1", label: "rpc throughput, 1 in flight, default, against Redis PING",
                unit: "req/s", samples: samples.ours, baselineSamples: samples.redis,
                note: "the default design (task-group race) against redis-benchmark -c 1 PING (one connection, "
                    + "no pipelining) on a redis-server of this run's own, alternating"))
    }

    /// `server`'s row: the bare client keeping 64 requests in flight against a one-loop server (as
    /// Redis serves on one thread), against `PING` on one connection pipelining 64 (`-P 64`: 64
    /// sent, 64 answered, the next 64 sent; the bare client refills its window as replies come).
    static func compareServer(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let samples = try await with("server", settings, notes: &report.notes) { redis -> Samples? in
            guard let redis else { return nil }
            return try await withBenchServer { server in
                try await alternate("server: bare client, 64 in flight", settings, redis: redis, pipeline: 64) {
                    try await BaselineBenchmark.throughput(port: server.port, inFlight: 64, settings: settings)
                }
            }
        }
        guard let samples else { return }
        report.add(
            BenchFigure(
                key: "server.redis_ping.pipelined_64",
                label: "server: bare client, 64 in flight, against Redis PING pipelined 64", unit: "req/s",
                samples: samples.ours, baselineSamples: samples.redis,
                note: "one server event loop, default configuration (de-duplication on), the bare client's echo; "
                    + "baseline: redis-benchmark -c 1 -P 64 PING on a redis-server of this run's own, alternating"))
    }

    /// `--runs` pairs of `ours` and Redis's `PING` at `pipeline`, alternating.
    private static func alternate(
        _ what: String, _ settings: BenchSettings, redis: RedisPing, pipeline: Int,
        _ ours: () async throws -> Double
    ) async throws -> Samples {
        var samples: Samples = ([], [])
        for run in 1...settings.runs {
            benchProgress("\(what), run \(run)/\(settings.runs)")
            samples.ours.append(try await ours())
            benchProgress("redis-benchmark -c 1 -P \(pipeline) PING, run \(run)/\(settings.runs)")
            samples.redis.append(try await redis.rate(pipeline: pipeline, settings))
        }
        return samples
    }
}
