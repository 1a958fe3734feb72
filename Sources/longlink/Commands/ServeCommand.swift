import LongLinkCLISupport
import LongLinkRedis
import LongLinkServer
import LongLinkTransport
import LongLinkWire
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `longlink serve`: runs the demo server until SIGINT or SIGTERM.
enum ServeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "serve",
        summary: "Run the demo server: echo, sleep, fail, login, chat rooms, quotes and alerts, count, emit.",
        discussion: """
            The first line on standard output is 'listening on HOST:PORT' (with --port 0, the port the
            system chose); log lines follow. SIGINT or SIGTERM shuts down gracefully (GoAway to every
            client, in-flight requests answered) and exits 0; a second signal exits at once with 1.
            With --tls-cert and --tls-key every connection speaks TLS (1.2 or 1.3, ALPN longlink/1);
            --tls-client-ca also requires client certificates. SIGHUP rereads the certificate and
            key: new connections get them, open ones keep theirs.
            Pushes: 'quotes' every 100 ms (best effort), 'alerts' (reliable), 'room.<id>' chat
            messages (reliable), and what 'emit' asks for.

            Methods (payloads are text or JSON; replies JSON unless said otherwise):
            \(Terminal.columns(methods.map { [$0.name, $0.summary] }))
            count keys its runs by (client id from Hello, request id), as the server de-duplicates:
            a resend the server de-duplicated gets the stored reply, still "runs":1; one that ran
            again says 2 (try --dedupe-window 0). Only a logged-in session's requests are
            de-duplicated: call login first, or a resend runs again. {"request_id":ID} asks
            without counting (0 if ID never ran), also for another client with "client_id".
            emit sends push i (1 to n) with payload {"index":i,"n":n}, the first at once, then one
            every interval_ms; it replies when all are queued ({"topic":..,"emitted":n,"reliable":..}
            plus "first_seq" and "last_seq" when reliable), so its timeout must cover the spacing.
            Cancelling the request stops the pushes not yet sent.
            login, echo, sleep, count and emit are also the methods 'longlink conform' calls: it
            checks a server against the protocol, and this one passes every rule.

            With --data-dir PATH (or the environment variable LONGLINK_DATA_DIR; the option wins),
            reliable pushes and the de-duplication window live in one SQLite file under PATH
            (longlink.sqlite, made when missing), so a restart, even kill -9, loses neither: a
            client that reconnects gets with Sync every push it had not acknowledged, and a request
            the old process answered is answered again from its stored reply, not run twice. One
            server per directory: a second one on it exits at once with an error naming it. --sync
            says when the file is forced to the disk, so what a machine crash can take: every-commit
            (the default: nothing answered), interval:DURATION (at most the last DURATION) or never
            (anything not yet written out). Without --data-dir or Redis they are kept in memory, and
            a restart loses them: the server says so on standard error.

            With a Redis URL, redis[s]://[[user]:password@]HOST[:PORT][/DB], the server joins a
            fleet: reliable pushes and the de-duplication window live in that Redis (keys under
            --redis-prefix, default 'longlink:'), so several servers on one Redis share them. A
            client that moves to another of them finds its unacknowledged pushes there, and a
            request resent to another runs once. While Redis is out of reach, reliable pushes and
            requests fail UNAVAILABLE; the server reconnects by itself. The URL comes from --redis,
            else --redis-url-file, else the environment variable LONGLINK_REDIS_URL (the last two
            keep the password out of the process list); the password is never printed. rediss://
            speaks TLS: the server's certificate is verified against the system's CAs, or those of
            --redis-ca, and must name HOST (also sent as SNI). A user logs in with HELLO AUTH as
            that ACL user; a password alone as 'default'.
            On a Redis Cluster, --redis-cluster gives any of its nodes as URLs separated by commas
            (also --redis-cluster-url-file, or LONGLINK_REDIS_CLUSTER_URL); every node is reached
            with the first URL's user, password and TLS, and the prefix, CA and durability apply to
            all. Not together with --redis. --redis-durability replicated:N acknowledges a push or
            a stored reply only once N replicas have it (WAIT N), so a failover loses nothing
            acknowledged; asynchronous, the default, acknowledges on the primary alone.
            """,
        options: [
            .value("port", "PORT", help: "The TCP port to listen on (required); 0 lets the system choose."),
            .value("host", "HOST", help: "The address to listen on (default 127.0.0.1; 0.0.0.0 for all)."),
            .value("heartbeat", "DURATION", help: "Heartbeat interval for clients that propose none (default 15s)."),
            .value(
                "dedupe-window", "DURATION", help: "How long finished requests are remembered (default 120s; 0 = off)."),
            .value("max-connections", "N", help: "The most open connections (default 10000)."),
            .value("server-id", "ID", help: "The id sent in Welcome (default: random)."),
            .value(
                "report-load", "PERMILLE",
                help: "Report this load (0-1000) in Welcome and Pong instead of the measured one, to test balancing."),
            .value(
                "redis", "URL",
                help: "Keep reliable pushes and the de-dup window in Redis: "
                    + "redis[s]://[[user]:password@]HOST[:PORT][/DB]."),
            .value("redis-url-file", "FILE", help: "Read the Redis URL from FILE (its first line) instead."),
            .value("redis-ca", "FILE", help: "Verify a rediss:// server against the CAs in FILE (PEM)."),
            .value("redis-prefix", "PREFIX", help: "Prefix of every Redis key and channel (default longlink:)."),
            .value(
                "redis-cluster", "URL[,URL…]",
                help: "Keep them in the Redis Cluster whose nodes these are (any of them): redis[s]://… as --redis."),
            .value(
                "redis-cluster-url-file", "FILE",
                help: "Read the Redis Cluster's URLs (its first line) from FILE instead."),
            .value(
                "redis-durability", "MODE",
                help: "asynchronous (default) or replicated:N: acknowledge once N replicas have each write."),
            .value(
                "data-dir", "PATH",
                help: "Keep reliable pushes and the de-dup window in a file under PATH: they survive a restart."),
            .value(
                "sync", "POLICY",
                help: "How --data-dir's file is synced: every-commit (default), interval:DURATION or never."),
            .value(
                "runs-log", "FILE",
                help: "Append 'CLIENT_ID REQUEST_ID' to FILE for each run of count (runs counted across restarts)."),
            .flag("no-feed", help: "Send no quotes or alerts."),
            .value("seed", "N", help: "Seed of the feed's prices, for runs that repeat (default: random)."),
            .value(
                "alert-step", "PRICE", help: "Alert when a price crosses a multiple of PRICE (default 1.00; 0 = none)."),
            .flag("quiet", help: "Print only the 'listening on' line (and the 'metrics on' line)."),
            .value(
                "metrics", "HOST:PORT",
                help: "Serve metrics in Prometheus's text format at http://HOST:PORT/metrics (port 0: any)."),
            .value(
                "tls-cert", "FILE", help: "Serve TLS with this certificate chain (PEM, leaf first); needs --tls-key."),
            .value("tls-key", "FILE", help: "The private key of --tls-cert (PEM)."),
            .value(
                "tls-client-ca", "FILE",
                help: "Require client certificates issued by the CAs in FILE (PEM): mutual TLS."),
        ]
    )

    /// Every method the server offers, for `--help` (a test checks that none is missing).
    static let methods: [(name: String, summary: String)] = [
        ("echo", "Replies with the payload (raw bytes)."),
        ("sleep", "Payload: milliseconds (0 to 3600000). Replies 'slept'; Cancel or a timeout stops it."),
        ("fail", "Payload: CODE:message, CODE a number or a name (NOT_FOUND). Replies with that status."),
        ("login", "Payload: a user name (1 to 64 bytes). Binds the connection to it: {\"user\":...}."),
        (
            "room.enter",
            "{\"room\":42,\"user\":\"alice\"}. Joins the room until room.leave or disconnect; replies its members."
        ),
        (
            "room.leave",
            "{\"room\":42,\"user\":\"alice\"}. Leaves a room this connection entered; replies the members left."
        ),
        ("room.say", "{\"room\":42,\"text\":\"hi\"}. A reliable push on 'room.42' to every member."),
        ("quotes.subscribe", "[\"AAPL\",...], after login. Sets the symbols of your 'quotes' pushes."),
        ("count", "{} counts this run of its request id; replies {\"request_id\":ID,\"runs\":N}."),
        ("emit", "{\"topic\":T,\"n\":N,\"reliable\":B,\"interval_ms\":MS}, after login. N pushes to you."),
    ]

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        guard let port = try arguments.integer("port", in: 0...65_535) else {
            throw UsageError("missing --port (use --port 0 to let the system choose)")
        }
        var configuration = ServerConfiguration()
        configuration.endpoint = .tcp(host: arguments.value("host") ?? "127.0.0.1", port: port)
        if let heartbeat = try arguments.duration("heartbeat") { configuration.defaultHeartbeat = heartbeat }
        if let window = try arguments.duration("dedupe-window") { configuration.dedupeWindow = window }
        if let limit = try arguments.integer("max-connections", in: 1...10_000_000) {
            configuration.maxConnections = limit
        }
        if let serverID = arguments.value("server-id") { configuration.serverID = serverID }
        configuration.tls = try tlsConfiguration(arguments)
        if let load = try arguments.integer("report-load", in: 0...1000) {
            let permille = UInt32(load)
            configuration.loadReporter = { permille }
        }
        let metrics = try Self.metrics(arguments)
        configuration.metrics = metrics?.sink
        if configuration.defaultHeartbeat > configuration.maximumHeartbeat {
            configuration.maximumHeartbeat = configuration.defaultHeartbeat
        }
        do {
            try configuration.validate()
        } catch {
            throw UsageError(error.message)
        }
        var feedConfiguration = DemoFeed.Configuration()
        if let seedText = arguments.value("seed") {
            guard let seed = UInt64(seedText) else {
                throw UsageError("--seed needs a whole number, not '\(seedText)'")
            }
            feedConfiguration.seed = seed
        }
        if let stepText = arguments.value("alert-step") {
            guard let cents = QuoteWalk.parseCents(stepText) else {
                throw UsageError("--alert-step needs a price such as 5, 0.25 or 0 (no alerts), not '\(stepText)'")
            }
            feedConfiguration.alertStepCents = cents == 0 ? nil : cents
        }
        let testMethods = try ClientTestMethods(runsLog: arguments.value("runs-log"))
        let log = EventLog(isEnabled: !arguments.flag("quiet"))
        let redis = try Self.redis(arguments)
        let dataDirectory = try Self.dataDirectory(arguments)
        if let dataDirectory, redis != nil {
            throw UsageError(
                "\(dataDirectory.source) keeps the stores on this machine's disk and a Redis URL keeps them in Redis:"
                    + " use one")
        }
        return await serve(
            configuration: configuration, redis: redis, dataDirectory: dataDirectory,
            feed: arguments.flag("no-feed") ? nil : feedConfiguration, testMethods: testMethods, metrics: metrics,
            log: log)
    }

    private static func serve(
        configuration: ServerConfiguration, redis: ServeRedis?, dataDirectory: DataDirectory?,
        feed feedConfiguration: DemoFeed.Configuration?, testMethods: ClientTestMethods,
        metrics: (endpoint: Endpoint, sink: PrometheusMetrics)?, log: EventLog
    ) async -> Int32 {
        // A reader of standard output that goes away must not kill the server.
        signal(SIGPIPE, SIG_IGN)
        let service = DemoService(log: { log($0) })
        var prepared = configuration
        service.prepare(&prepared)
        let configuration = prepared
        var router = service.router()
        testMethods.register(in: &router)
        let server: LongLinkServer
        do {
            if let redis {
                server = LongLinkServer(configuration: configuration, router: router, stores: try redis.stores())
            } else if let dataDirectory {
                let stores = try durableStores(on: dataDirectory, configuration: configuration, log: log)
                server = LongLinkServer(configuration: configuration, router: router, stores: stores)
            } else {
                Terminal.standardError.line(inMemoryWarning)
                server = LongLinkServer(configuration: configuration, router: router)
            }
        } catch {
            log.flush()
            Terminal.standardError.line("longlink serve: \(error.message)")
            return ExitStatus.failure
        }
        service.attach(to: server)
        testMethods.attach(to: server)
        let feed = feedConfiguration.map { DemoFeed(service: service, configuration: $0, log: { log($0) }) }

        let signalsSeen = Atomic<Int>(0)
        let watcher = SignalWatcher([SIGINT, SIGTERM]) { number in
            if signalsSeen.add(1, ordering: .relaxed).newValue == 1 {
                log("\(SignalWatcher.name(of: number)): shutting down")
                server.shutdown()
            } else {
                log.flush()
                Terminal.standardError.line("longlink serve: \(SignalWatcher.name(of: number)) again, exiting now")
                exit(ExitStatus.failure)
            }
        }
        defer { watcher.cancel() }
        // SIGHUP rereads the TLS certificate and key: new connections get them, open ones keep theirs.
        let reloader = SignalWatcher(configuration.tls == nil ? [] : [SIGHUP]) { _ in
            guard let tls = configuration.tls else { return }
            do {
                try server.reloadTLS(tls)
                log("SIGHUP: TLS certificate reloaded")
            } catch {
                Terminal.standardError.line(
                    "longlink serve: SIGHUP: TLS reload failed, keeping the old certificate: \(error)")
            }
        }
        defer { reloader.cancel() }
        // Not in the task group below: its first task to end must be run().
        let redisCheck = redis.map { redis in Task { await warnIfUnreachable(redis) } }
        defer { redisCheck?.cancel() }

        var metricsPage: MetricsEndpoint?
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.run() }
                let address = try await server.localAddress
                Terminal.standardOutput.line("listening on \(address)")
                if let metrics {
                    metricsPage = await serveMetrics(of: server, sink: metrics.sink, on: metrics.endpoint)
                    if metricsPage == nil {
                        server.shutdown()
                        throw LongLinkError(code: .invalidConfiguration, message: "no metrics page")
                    }
                }
                if let redis {
                    log(
                        "fleet: reliable pushes and the de-dup window in \(redis), keys under "
                            + "'\(redis.settings.keyPrefix)', durability \(redis.settings.durability)")
                }
                if let dataDirectory {
                    log("durable: reliable pushes and the de-dup window in \(dataDirectory)")
                }
                if let feed {
                    group.addTask { await feed.run(server: server) }
                }
                if log.isEnabled {
                    group.addTask { await reportStatistics(of: server, to: log) }
                }
                // The feed and the reports run until cancelled: the first task to end is run().
                try await group.next()
                group.cancelAll()
            }
        } catch {
            await metricsPage?.close()
            log.flush()
            Terminal.standardError.line("longlink serve: cannot serve on \(configuration.endpoint): \(error)")
            return ExitStatus.failure
        }
        await metricsPage?.close()
        log("stopped")
        log.flush()
        return ExitStatus.success
    }

    /// The TLS configuration of `--tls-cert`, `--tls-key` and `--tls-client-ca`; nil without them.
    static func tlsConfiguration(_ arguments: ParsedArguments) throws(UsageError) -> ServerTLSConfiguration? {
        switch (arguments.value("tls-cert"), arguments.value("tls-key")) {
        case (nil, nil):
            if arguments.value("tls-client-ca") != nil {
                throw UsageError("--tls-client-ca needs --tls-cert and --tls-key")
            }
            return nil
        case (let certificate?, let key?):
            var tls = ServerTLSConfiguration(certificateChain: .file(certificate), privateKey: .file(key))
            if let clientCA = arguments.value("tls-client-ca") {
                tls.clientCertificateVerification = .required(.pemFile(clientCA))
            }
            return tls
        default:
            throw UsageError("--tls-cert and --tls-key go together")
        }
    }

    /// Logs the server's counters every few seconds when they changed.
    private static func reportStatistics(of server: LongLinkServer, to log: EventLog) async {
        var last = ServerStatistics()
        while true {
            do {
                try await Task.sleep(for: .seconds(5))
            } catch {
                return
            }
            let now = server.statistics
            guard now != last else { continue }
            last = now
            log(
                "connections \(now.openConnections) open, \(now.acceptedConnections) accepted"
                    + (now.rejectedConnections > 0 ? ", \(now.rejectedConnections) rejected" : "")
                    + "; requests \(now.requestsReceived); pushes \(now.reliablePushesSent) reliable, "
                    + "\(now.bestEffortPushesSent) best effort (\(now.bestEffortPushesDropped) dropped)")
        }
    }
}
