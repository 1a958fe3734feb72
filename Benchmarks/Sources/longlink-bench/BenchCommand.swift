import BenchCLISupport
import Foundation

/// `longlink-bench [SCENARIO] [--duration S] [--runs N] [--json]`: benchmarks.
///
/// Each network scenario runs in this process against its own server on 127.0.0.1 (port 0); the
/// memory and timeout scenarios measure a client in a child process (this executable again,
/// scenario `_probe`) so that its memory and CPU time are its own.
enum BenchCommand {
    /// The scenarios, in the order `all` runs them: the child-process ones first, while this
    /// process is still small.
    static let scenarios = ["memory", "timeouts", "rpc", "pushes", "recovery", "server", "tls", "payloads", "wire"]
    static let names = [
        "wire", "baseline", "rpc", "pushes", "memory", "timeouts", "recovery", "server", "tls", "payloads", "fleet",
        "durable", "peers", "heartbeat", "links", "ticks", "all",
    ]

    static let spec = CommandSpec(
        program: "longlink-bench", name: "",
        summary:
            "Measure performance against a bare baseline client: rpc, pushes, memory, timeouts, recovery, server, payloads, fleet, peers.",
        discussion: """
            all        Every scenario below (the default).
            baseline   The bare client alone: blocking socket on a plain thread, same frames, same server.
            rpc        Requests/s with 1, 64 and 1,024 in flight; latency p50/p99/p99.9 with 1 in flight;
                       each against the baseline measured in the same run; 1 in flight against Redis's
                       PING on one connection (redis-benchmark -c 1), when Redis is installed.
            pushes     Reliable pushes (acked automatically) and best-effort pushes, in messages/s.
            memory     Bytes per pending request at 100,000 pending, beyond a bare suspended task; an
                       idle client's resident memory. Measured in a child process.
            timeouts   100,000 pending requests with one deadline: how late the last one fails, CPU time.
            recovery   Reconnect after a server restart; dead-link detection through a black-holed relay.
            server     Connections held and requests/s across 2,000 clients; the bare client at 64 in
                       flight against Redis's PING pipelined 64 (redis-benchmark -c 1 -P 64), when installed.
            tls        rpc at 64 in flight and reliable pushes over TLS against plain TCP, as ratios;
                       TLS handshakes per second against plain connects per second.
            payloads   A cacheFirst hit against a round trip; a 500-candle protobuf reply and 64 KiB payloads
                       (received and echoed) with and without zlib: payload bytes, time per call, rate, MB/s.
            wire       Encode and decode throughput of the frame codec (each measurement: --duration / 5).
            fleet      A fleet server on Redis: reliable pushes/s beside redis-benchmark's XADD (and the
                       produce script) on the same Redis; requests/s with the Redis de-dup window beside
                       the in-memory one; failover between two servers; Redis ops per push and per request;
                       connections per server. Starts its own redis-server; not part of all.
                       fleet --cluster: the fleet on Redis Cluster instead, one primary against three
                       (each with a replica): pushes/s, requests/s, Redis CPU per push on each primary,
                       a primary killed under load to the first success. Starts its own cluster nodes.
            durable    Reliable pushes/s stored through push(to:) (and the store's append alone) with the durable
                       store's .everyCommit, .interval(1 s) and .never, the in-memory store, and Redis XADD with
                       appendfsync always and everysec (redis-benchmark -c N -P 1), at 1 and 64 producers, in one
                       run on the same disk; disk bytes per stored push; open + first read of a store holding
                       1,000,000 pushes; rpc p50 and 64-in-flight rate with a durable de-dup window against the
                       in-memory one. Starts its own redis-server (--appendonly yes); not part of all.
            peers      Core NATS beside LongLink, alternating: best-effort pushes (32 B) against NATS pub/sub;
                       rpc (default design) against NATS request-reply at 1, 64 and 1,024 in flight, and
                       the p50 round trip at 1. Starts its own nats-server and builds Peers/nats/main.go with
                       GOPATH=/usr/share/gocode GO111MODULE=off go build. Needs nats-server and go on the PATH
                       (Debian: apt-get install nats-server golang-go golang-github-nats-io-go-nats-dev;
                       nats-server is in /usr/sbin); without them it says so and exits 0. Not part of all.
            heartbeat  One idle link behind a NAT that forgets after 300 s, over a simulated day (the adaptive
                       heartbeat's learner on virtual time, no sockets): pings sent by the fixed 15 s default
                       and by the adaptive policy, links lost silently and to probes, the interval learned,
                       and the worst time to notice a black hole. Not part of all.
            links      One server process (longlink-bench's own, in a child process, durable store) holding
                       --links logged-in links (default 10,000; each process may hold ulimit -n descriptors),
                       each its own principal, subscribed, 3 unacknowledged reliable pushes held, pinging at
                       the default interval; bare protocol clients in child processes, sources across
                       127.0.0.0/8: server memory per link, CPU per link per minute over --idle (default
                       30 s); then the reconnect storm: SIGKILL, the server started again on its data
                       directory, time until 50/99/100 % are synced again, logins/s, CPU per login, peak
                       connection attempts/s, links not back, pushes lost; the same idle connection count
                       on redis-server and nats-server when installed. One run. Not part of all.
            ticks      A trading app's prices when the feed outruns it: 5,000 symbols, Zipf-skewed, 200,000
                       updates/s best-effort from the server, a topic per symbol, conflated by topic in the client;
                       the consumer spins --tick-work per tick. Age of each tick taken (p50/p99/max, from the
                       server's stamp), symbols starved (owing a newer price over 1 s), ticks taken and conflated,
                       server and client CPU, disconnections; beside the same feed through nats-server to a
                       nats.go subscriber (default pending limits) spending the same time per message,
                       alternating per run (as peers: needs nats-server and go, else LongLink alone).
                       --duration defaults to 10 s here, long enough for NATS's pending queue to fill.
                       Not part of all.
            Every figure is the median of --runs runs; ratios compare medians measured in the same run.
            """,
        positionals: [
            PositionalSpec("SCENARIO", help: "What to measure (see above); all by default.", isOptional: true)
        ],
        options: [
            .value("duration", "DURATION", help: "Length of one measurement: 2 (seconds), 500ms. Default 2s."),
            .value("runs", "N", help: "Runs per figure (the median is reported). Default 3."),
            .value(
                "in-flight", "N",
                help: "rpc only: measure throughput at this one in-flight level (both designs), no latency rows."),
            .value(
                "design", "DESIGN",
                help: "rpc --in-flight only: measure one design alone (baseline, heap, group or loop), to profile it."),
            .value(
                "redis-bin", "DIR",
                help: "fleet, durable, rpc, server: the directory of redis-server and redis-benchmark (default: PATH)."),
            .value("links", "N", help: "links only: how many links the server holds. Default 10000."),
            .value("idle", "DURATION", help: "links only: the idle window for CPU per link. Default 30s."),
            .value("tick-work", "DURATION", help: "ticks only: the consumer's busy time per tick. Default 20us."),
            .value("tick-rate", "N", help: "ticks only: the updates per second the feed aims at. Default 200000."),
            .flag("cluster", help: "fleet only: on a Redis Cluster of one primary and of three (see above)."),
            .flag("json", help: "Print the results as one JSON object instead of a table."),
        ]
    )

    /// Runs `longlink-bench` with `arguments` (without the program name); returns the exit status.
    static func main(_ arguments: [String]) async -> Int32 {
        await spec.run(arguments, run)
    }

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let scenario = arguments.positionals.first ?? "all"
        if scenario == BenchProbe.scenarioName {
            return await BenchProbe.main()
        }
        if scenario == LinksServer.scenarioName { return await LinksServer.main() }
        if scenario == LinkClients.scenarioName { return LinkClients.main() }
        guard names.contains(scenario) else {
            throw UsageError("unknown scenario '\(scenario)' (available: \(names.joined(separator: ", ")))")
        }
        let duration = try arguments.duration("duration") ?? .seconds(scenario == "ticks" ? 10 : 2)
        guard duration > .zero else { throw UsageError("--duration must be more than zero") }
        let runs = try arguments.integer("runs", in: 1...100) ?? 3
        let inFlight = try arguments.integer("in-flight", in: 1...100_000)
        let design = arguments.value("design")
        if let design {
            guard inFlight != nil else { throw UsageError("--design needs --in-flight") }
            guard RPCDesign(rawValue: design) != nil else {
                throw UsageError(
                    "unknown design '\(design)' (available: \(RPCDesign.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
        }
        let redisDirectory = arguments.value("redis-bin")
        let cluster = arguments.flag("cluster")
        guard !cluster || scenario == "fleet" else { throw UsageError("--cluster is for the fleet scenario only") }
        if ["fleet", "durable"].contains(scenario), case .failure(let missing) = RedisTools.find(in: redisDirectory) {
            // One line and a failure status, before any table: nothing can be measured.
            Terminal.standardError.line("longlink-bench \(scenario): \(missing)")
            return ExitStatus.failure
        }
        var links = LinksBenchmark.Options()
        links.links = try arguments.integer("links", in: 1...1_000_000) ?? links.links
        links.idle = try arguments.duration("idle") ?? links.idle
        guard links.idle > .zero else { throw UsageError("--idle must be more than zero") }
        var ticks = TicksBenchmark.Options()
        ticks.work = try arguments.duration("tick-work") ?? ticks.work
        ticks.rate = Double(try arguments.integer("tick-rate", in: 1...10_000_000) ?? Int(ticks.rate))
        let settings = BenchSettings(
            duration: duration, runs: runs, onlyInFlight: inFlight, onlyDesign: design.flatMap(RPCDesign.init),
            redisDirectory: redisDirectory, redisCluster: cluster, links: links, ticks: ticks)
        var report = BenchReport(
            command: (["longlink-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "), runs: runs,
            duration: duration.inSeconds)
        let selected = scenario == "all" ? scenarios : [scenario]
        var failed = false
        for name in selected {
            do {
                try await run(name, settings, into: &report)
            } catch {
                failed = true
                report.notes.append("\(name): FAILED: \(error)")
                Terminal.standardError.line("longlink-bench \(name): failed: \(error)")
            }
        }
        Terminal.standardOutput.line(arguments.flag("json") ? report.json() : report.table())
        return failed ? ExitStatus.failure : ExitStatus.success
    }

    private static func run(_ name: String, _ settings: BenchSettings, into report: inout BenchReport) async throws {
        switch name {
        case "baseline": try await BaselineBenchmark.run(settings, into: &report)
        case "rpc": try await RPCBenchmark.run(settings, into: &report)
        case "pushes": try await PushBenchmark.run(settings, into: &report)
        case "memory": try await MemoryBenchmark.run(settings, into: &report)
        case "timeouts": try await TimeoutBenchmark.run(settings, into: &report)
        case "recovery": try await RecoveryBenchmark.run(settings, into: &report)
        case "server": try await ServerBenchmark.run(settings, into: &report)
        case "tls": try await TLSBenchmark.run(settings, into: &report)
        case "payloads": try await PayloadBenchmark.run(settings, into: &report)
        case "wire": WireBenchmark.run(settings, into: &report)
        case "fleet" where settings.redisCluster: try await FleetClusterBenchmark.run(settings, into: &report)
        case "fleet": try await FleetBenchmark.run(settings, into: &report)
        case "durable": try await DurableBenchmark.run(settings, into: &report)
        case "peers": try await PeersBenchmark.run(settings, into: &report)
        case "heartbeat": HeartbeatBenchmark.run(settings, into: &report)
        case "links": try await LinksBenchmark.run(settings, settings.links, into: &report)
        case "ticks": try await TicksBenchmark.run(settings, settings.ticks, into: &report)
        default: throw BenchError("no scenario \(name)")
        }
    }
}
