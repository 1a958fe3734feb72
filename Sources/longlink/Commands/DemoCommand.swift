import LongLinkCore
import Foundation
import LongLink
import LongLinkCLISupport
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

/// `longlink demo`: the whole product in one command. An embedded demo server (quotes, price
/// alerts, a chat room) sits behind the fault-injecting proxy; a client logs in, enters a room,
/// makes requests and consumes pushes while the network is cut, black-holed, split into one-byte
/// writes, the server restarts and sends the session `GoAway` (`UNAVAILABLE`, reconnect after
/// 100 ms: the client connects again, logs in and resends). A running tally shows the client recovering;
/// the summary names what was lost and duplicated (0 and 0). With `--fleet N`, N servers share a
/// local Redis and the one the client is on crashes (``FleetDemoBackend``).
enum DemoCommand: Subcommand {
    static let spec = CommandSpec(
        name: "demo",
        summary: "Embedded server and client with network faults injected, live output.",
        discussion: """
            Ends by itself after --duration (default 30s) with a summary: requests ok / timed out /
            failed, quotes, alerts delivered, duplicates and lost (both must be 0).
            With --fleet N, N servers share reliable pushes and the de-dup window in a redis-server
            the demo starts on a free port (and stops at the end); each sits behind its own fault
            proxy, the client knows them all, and the demo crashes the server the client is on, then
            restarts it. Every request's runs are counted across the fleet: the summary adds
            'executed twice' (must be 0). A request caught on a crashed server fails outcomeUnknown
            once the server's lease in Redis ends (within 3 s): it never runs a second time.
            With --redis-cluster as well, the fleet shares a local Redis Cluster instead: six
            redis-servers on free ports joined with CLUSTER ADDSLOTSRANGE, MEET and REPLICATE (three
            primaries with a replica each), writes acknowledged once the replica has them.
            """,
        options: [
            .value("duration", "DURATION", help: "How long to run: seconds, or 20s, 2m (default 30s)."),
            .flag("quiet", help: "Print only the summary."),
            .flag("no-faults", help: "Run without injecting faults."),
            .flag(
                "tls",
                help: "Speak TLS, with a certificate made at start (OpenSSL's C API); the client verifies it."),
            .value(
                "fleet", "N",
                help: "N servers (2-16) sharing one local redis-server (needs the redis-server package); "
                    + "the client's server is crashed and restarted."),
            .flag("redis-cluster", help: "With --fleet: a local Redis Cluster (3 primaries, 3 replicas) instead."),
            .value(
                "nat", "DURATION",
                help: "Instead: an adaptive heartbeat learning a NAT that forgets idle mappings after DURATION "
                    + "(5s, say); prints what it learned."),
        ]
    )

    private struct Alert: Decodable {
        var symbol: String
        var price: Double
    }

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let duration = try arguments.duration("duration") ?? .seconds(30)
        if let nat = try arguments.duration("nat") {
            guard nat >= .milliseconds(200) else { throw UsageError("--nat needs at least 200ms") }
            do {
                return try await NATDemo.run(nat: nat, duration: max(duration, nat * 12), quiet: arguments.flag("quiet"))
            } catch {
                Terminal.standardError.line("longlink demo --nat: \(error)")
                return ExitStatus.failure
            }
        }
        guard duration >= .seconds(5) else { throw UsageError("the demo needs at least 5 seconds") }
        let fleet = try arguments.integer("fleet", in: 2...16)
        let cluster = arguments.flag("redis-cluster")
        if cluster, fleet == nil { throw UsageError("--redis-cluster needs --fleet N") }
        do {
            return try await demo(
                duration: duration, quiet: arguments.flag("quiet"), faults: !arguments.flag("no-faults"),
                tls: arguments.flag("tls"), fleet: fleet.map { (count: $0, cluster: cluster) })
        } catch let missing as LocalRedisServer.Missing {
            Terminal.standardError.line("longlink demo --fleet: \(missing)")
            return ExitStatus.failure
        } catch {
            Terminal.standardError.line("longlink demo: \(error)")
            return ExitStatus.failure
        }
    }

    private static func demo(
        duration: Duration, quiet: Bool, faults: Bool, tls: Bool, fleet: (count: Int, cluster: Bool)?
    ) async throws -> Int32 {
        let out = Terminal.standardOutput
        let clock = ContinuousClock()
        let start = clock.now
        let tally = Locked(DemoTally())
        func say(_ kind: String, _ style: Terminal.Style?, _ text: String) {
            guard !quiet else { return }
            let time = String(format: "%6.1fs", (clock.now - start).seconds)
            let label = kind.padding(toLength: 9, withPad: " ", startingAt: 0)
            out.line("\(out.styled(time, .dim))  \(style.map { out.styled(label, $0) } ?? label)  \(text)")
        }

        // The server side: the demo service behind fault proxies, one embedded server or a fleet.
        var serverConfiguration = ServerConfiguration()
        serverConfiguration.serverID = "demo"
        serverConfiguration.drainTimeout = .seconds(1)
        serverConfiguration.shutdownRetryAfter = .milliseconds(100)
        serverConfiguration.minimumHeartbeat = .milliseconds(100)
        // With --tls: a fresh certificate for localhost and 127.0.0.1, which the client takes as
        // its only trust root, so the demo verifies the server as an app would.
        let certificate = tls ? try SelfSignedCertificate() : nil
        if let certificate {
            serverConfiguration.tls = ServerTLSConfiguration(
                certificateChain: .bytes(certificate.certificatePEM), privateKey: .bytes(certificate.privateKeyPEM))
        }
        var feedConfiguration = DemoFeed.Configuration()
        feedConfiguration.alertStepCents = 250
        let backend: any DemoBackend
        var signalWatcher: SignalWatcher?
        if let fleet {
            let fleetBackend = try await FleetDemoBackend(
                count: fleet.count, cluster: fleet.cluster, configuration: serverConfiguration, feed: feedConfiguration)
            signalWatcher = fleetBackend.stopOnSignals()
            backend = fleetBackend
        } else {
            backend = try await EmbeddedDemoBackend(configuration: serverConfiguration, feed: feedConfiguration)
        }
        defer { signalWatcher?.cancel() }
        say("server", .bold, backend.banner)

        // The client side, written as an app would.
        var configuration = ClientConfiguration(endpoints: backend.endpoints)
        configuration.clientID = "demo-app"
        if let certificate {
            var clientTLS = TLSConfiguration()
            clientTLS.trustRoots = .pemBytes(certificate.certificatePEM)
            configuration.tls = clientTLS
        }
        configuration.heartbeat = .milliseconds(500)
        configuration.backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(1))
        configuration.defaultTimeout = .seconds(3)
        configuration.connectTimeout = .seconds(1)
        configuration.livenessProbeTimeout = .milliseconds(500)
        configuration.balancing.probeTimeout = .seconds(1)
        configuration.login = { session in
            _ = try await session.request("login", payload: Array("alice".utf8))
        }
        configuration.subscriptions = [
            Subscription(method: "quotes.subscribe", payload: Array(#"["AAPL","MSFT","TSLA","NVDA","AMZN"]"#.utf8))
        ]
        let client = LongLinkClient(configuration: configuration)
        let quotes = client.pushes(topic: "quotes")
        let alerts = client.pushes(topic: "alerts")
        let (enteredRooms, enteredRoom) = AsyncStream<LongLinkSubscription<[UInt8]>>.makeStream()

        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await client.run() }
                group.addTask {
                    for await state in client.connectionStates {
                        say("link", state.phase == .connected ? .green : .yellow, "\(state)")
                    }
                }
                group.addTask {
                    for await _ in quotes { tally.withLock { $0.quotes += 1 } }
                }
                group.addTask {
                    for await push in alerts {
                        tally.withLock { $0.alertDeliveries.append(push.seq) }
                        if let alert = try? push.decode(as: Alert.self) {
                            say(
                                "alert", .cyan,
                                "seq \(push.seq)  \(alert.symbol) crossed \(String(format: "%.2f", alert.price))")
                        }
                    }
                }
                // The feed: quotes every 100 ms, an alert whenever a price crosses a step.
                group.addTask {
                    while clock.now - start < duration {
                        if let report = await backend.feedStep() {
                            tally.withLock { $0.alertsEmitted.formUnion(report.alertSeqs) }
                        }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
                group.addTask {
                    for await room in enteredRooms {
                        for await replay in room.replays {
                            switch replay {
                            case .success(let reply):
                                say("room", .green, "entered again: \(String(decoding: reply, as: UTF8.self))")
                            case .failure(let error):
                                say("room", .red, "entering again failed: \(error.code): \(error.message)")
                            }
                        }
                    }
                }
                // Requests: one every 300 ms, alternating an echo and a chat message, in a room
                // entered at run time (the client enters it again after every reconnect).
                group.addTask {
                    let room = try await client.subscribe(
                        method: "room.enter", payload: Array(#"{"room":42,"user":"alice"}"#.utf8))
                    say("room", .green, "entered at run time: \(String(decoding: room.reply, as: UTF8.self))")
                    enteredRoom.yield(room)
                    enteredRoom.finish()
                    var number = 0
                    while clock.now - start < duration - .seconds(1) {
                        number += 1
                        let method = number % 2 == 0 ? "room.say" : "echo"
                        let payload = number % 2 == 0 ? #"{"room":42,"text":"hello #\#(number)"}"# : "ping #\(number)"
                        let began = clock.now
                        do {
                            _ = try await client.request(method, payload: Array(payload.utf8))
                            tally.withLock { $0.requestsOK += 1 }
                            if number % 10 == 1 {
                                say(
                                    "request", nil, "#\(number) \(method) ok in \(Self.milliseconds(clock.now - began))"
                                )
                            }
                        } catch let error as LongLinkError {
                            tally.withLock {
                                if error.code == .deadlineExceeded {
                                    $0.requestsTimedOut += 1
                                } else {
                                    $0.requestsFailed += 1
                                }
                            }
                            say("request", .red, "#\(number) \(method) \(error.code): \(error.message)")
                        }
                        try await Task.sleep(for: .milliseconds(300))
                    }
                }
                group.addTask {
                    guard faults else { return }
                    for fault in backend.faults() {
                        try await Task.sleep(for: fault.gap)
                        guard clock.now - start < duration - .seconds(4) else { break }
                        tally.withLock { $0.faults += 1 }
                        say("FAULT", .yellow, fault.text())
                        await fault.action()
                    }
                }
                group.addTask {
                    while clock.now - start < duration {
                        try await Task.sleep(for: .seconds(2))
                        say("tally", .bold, tally.withLock { $0.line })
                    }
                }
                // Let the run end, then give the last alerts a moment to arrive before shutting down.
                try await Task.sleep(for: duration)
                let drainEnd = clock.now.advanced(by: .seconds(15))
                while clock.now < drainEnd, tally.withLock({ $0.lost > 0 }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                client.shutdown()
                group.cancelAll()
            }
        } catch {
            await backend.stop()
            throw error
        }
        let statistics = await client.statistics
        await backend.stop()

        let final = tally.withLock { $0 }
        let (backendRows, backendFailed) = backend.summaryRows()
        out.line("")
        out.line(out.styled("summary", .bold))
        out.write(Terminal.columns(final.summary(statistics: statistics, backendRows: backendRows)))
        let good = final.lost == 0 && final.duplicates == 0 && !backendFailed
        let verdict =
            fleet == nil
            ? "lost 0, duplicates 0: every alert arrived exactly once"
            : "lost 0, duplicates 0, executed twice 0: every alert arrived once, no request ran twice"
        out.line(
            good
                ? out.styled(verdict, .green)
                : out.styled(
                    fleet == nil ? "LOST OR DUPLICATED ALERTS" : "LOST OR DUPLICATED ALERTS, OR A REQUEST RAN TWICE",
                    .red))
        return good ? ExitStatus.success : ExitStatus.failure
    }

    private static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f ms", duration.seconds * 1000)
    }
}
