import Foundation
import LongLink
import LongLinkCLISupport
import LongLinkRedis
import LongLinkServer
import LongLinkTesting
import LongLinkWire

/// `longlink soak`: the chaos soak for any length of time, with a summary table.
enum SoakCommand: Subcommand {
    static let spec = CommandSpec(
        name: "soak",
        summary: "Requests and reliable pushes through a fault-injecting proxy; check nothing is lost.",
        discussion: """
            Runs an in-process server behind the fault proxy and a client that sends a request every
            100 ms while the server emits a reliable push every 50 ms. Faults cycle for the whole run
            (cuts, resets, black holes, one-byte writes, latency, a server restart, GoAway, refused
            connections, a NAT that forgets idle mappings, a kick for good as "logged in elsewhere"
            after which the client logs in again through its credential provider, and a credential
            that expires: the client's credentials live 6 s and are refreshed on the live link, and
            for the expiry the provider refuses until the credential has expired, so that the client
            logs in again with a new one); the last seconds are quiet. Prints a summary and exits 1 when a request hung
            or ran twice, or a push was lost, duplicated or reordered.
            With --fleet N, N servers share reliable pushes and the de-dup window in a redis-server
            the soak starts on a free port (the redis-server package); each sits behind its own
            fault proxy and the client knows them all. Requests take 200 ms on the server, and the
            schedule also crashes the client's server and restarts it: a request caught by a crash
            may time out, none may run twice.
            With --redis-cluster as well, the servers share a Redis Cluster the soak starts (six
            redis-servers on free ports joined with CLUSTER ADDSLOTSRANGE, MEET and REPLICATE):
            three primaries with a replica each, writes acknowledged once the replica has them
            (replicated:1). The schedule also kills the primary of the soak's principal (SIGKILL);
            its replica takes over and the killed node returns as the new primary's replica. The
            summary counts the primaries killed, and the requests in flight across a failover (from
            the kill until the replica served): answered after it (their store calls made again
            within their deadline) or failed.
            With --data-dir PATH, the server is this program's 'serve --data-dir PATH' in a child
            process (not with --fleet): reliable pushes and the de-dup window in its durable store.
            The schedule also kills it (SIGKILL) and starts it again on the same directory and port;
            the client's requests are 'count' (its runs logged to PATH/soak-runs.log, outside the
            process that dies) and its pushes come from 'emit'. Nothing may be lost, duplicated or
            run twice across the kills.
            The process's memory (RSS and the C heap in use) is printed at minute 5 (halfway through a
            shorter run) and when the load ends; the run fails when the RSS grew by more than
            --memory-growth MiB between the two.
            """,
        options: [
            .value("minutes", "N", help: "How long to run, in minutes (default 1)."),
            .value("duration", "DURATION", help: "How long to run, e.g. 90s or 5m (instead of --minutes)."),
            .value(
                "request-timeout", "DURATION",
                help: "Each request's deadline (default 3s); requests wait for a store failing over within it."),
            .value("fleet", "N", help: "N servers (2-16) sharing one local redis-server; crashes in the schedule."),
            .flag(
                "redis-cluster",
                help: "With --fleet: a local Redis Cluster (3 primaries, 3 replicas) instead; primaries killed too."),
            .value(
                "data-dir", "PATH",
                help: "Soak a 'serve --data-dir PATH' child process, killed with SIGKILL and restarted."),
            .value("memory-growth", "MIB", help: "The most RSS growth from minute 5 to the end, in MiB (default 16)."),
            .value(
                "credential-lifetime", "DURATION",
                help: "How long each credential lives (default 6s; at least 1s); refreshed halfway through."),
            .flag("no-credentials", help: "No credentials: neither the kick for good nor the expiry."),
            .flag("no-faults", help: "Run without injecting faults."),
            .flag("quiet", help: "Print only the summary."),
        ]
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        var duration = Duration.seconds(60)
        if let minutes = try arguments.integer("minutes", in: 1...10_000) { duration = .seconds(minutes * 60) }
        if let given = try arguments.duration("duration") { duration = given }
        guard duration >= .seconds(10) else { throw UsageError("a soak needs at least 10 seconds") }
        var configuration = SoakConfiguration(duration: duration)
        if let timeout = try arguments.duration("request-timeout") {
            guard timeout >= .milliseconds(100) else { throw UsageError("--request-timeout must be at least 100ms") }
            configuration.requestTimeout = timeout
        }
        configuration.injectsFaults = !arguments.flag("no-faults")
        if let lifetime = try arguments.duration("credential-lifetime") {
            guard lifetime >= .seconds(1) else { throw UsageError("--credential-lifetime must be at least 1s") }
            configuration.credentialLifetime = lifetime
        }
        if arguments.flag("no-credentials") { configuration.credentialLifetime = nil }
        if let mebibytes = try arguments.integer("memory-growth", in: 0...1_048_576) {
            configuration.memoryGrowthAfterBaselineLimit = mebibytes << 20
        }
        let out = Terminal.standardOutput
        configuration.onMemorySample = { sample in out.line("memory at \(sample.elapsedText): \(sample)") }
        let fleetSize = try arguments.integer("fleet", in: 2...16)
        let quiet = arguments.flag("quiet")
        let start = ContinuousClock.now
        var redis: LocalFleetRedis?
        var signalWatcher: SignalWatcher?
        defer { signalWatcher?.cancel() }
        if arguments.flag("redis-cluster"), fleetSize == nil { throw UsageError("--redis-cluster needs --fleet N") }
        if let directory = arguments.value("data-dir") {
            guard fleetSize == nil else { throw UsageError("--data-dir soaks one server: not with --fleet") }
            guard !directory.isEmpty else { throw UsageError("--data-dir needs a directory, not ''") }
            configuration.dataDirectory = directory
            if !quiet { out.line("one 'serve --data-dir \(directory)' in a child process, killed with SIGKILL") }
        }
        if let fleetSize {
            do {
                let local = try await LocalFleetRedis.start(cluster: arguments.flag("redis-cluster"))
                redis = local
                signalWatcher = local.stopOnSignals()
                var fleet = SoakFleet(servers: fleetSize, stores: local.stores(keyPrefix: "soak:"))
                if let cluster = local.cluster {
                    fleet.killPrimary = {
                        let failover = try await cluster.killPrimary(servingSlotOf: "{p:\(SoakServers.principal)}")
                        return SoakFailover(
                            description: "primary on port \(failover.killedPort) replaced by port "
                                + "\(failover.promotedPort) in " + String(format: "%.1fs", failover.took.seconds)
                                + "; the killed node is back as its replica",
                            took: failover.took)
                    }
                }
                configuration.fleet = fleet
                if !quiet { out.line("\(fleetSize) servers sharing \(local)") }
            } catch {
                Terminal.standardError.line("longlink soak --fleet: \(error)")
                return ExitStatus.failure
            }
        }
        let report: SoakReport
        do {
            report = try await SoakRunner(configuration: configuration).run { event in
                guard !quiet else { return }
                let time = String(format: "%7.1fs", (ContinuousClock.now - start).seconds)
                switch event {
                case .fault(let text): out.line("\(time)  \(out.styled("fault", .yellow))  \(text)")
                case .state(let state): out.line("\(time)  state  \(state)")
                case .request(let number, let error?, _):
                    out.line("\(time)  \(out.styled("request #\(number)", .red))  \(error.code): \(error.message)")
                case .request, .push: break
                }
            }
        } catch {
            await redis?.stop()
            Terminal.standardError.line("longlink soak: \(error)")
            return ExitStatus.failure
        }
        await redis?.stop()
        out.line("")
        out.line(report.description)
        return report.passed ? ExitStatus.success : ExitStatus.failure
    }
}
