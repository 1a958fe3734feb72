import Foundation
import LongLink
import LongLinkCLISupport
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

/// `longlink demo`: the whole product in one command. An embedded demo server (quotes, price
/// alerts, a chat room) sits behind the fault-injecting proxy; a client logs in, enters a room,
/// makes requests and consumes pushes while the network is cut, black-holed, split into one-byte
/// writes, the server restarts and kicks the session. A running tally shows the client recovering;
/// the summary names what was lost and duplicated (0 and 0).
enum DemoCommand: Subcommand {
    static let spec = CommandSpec(
        name: "demo",
        summary: "Embedded server and client with network faults injected, live output.",
        discussion: """
            Ends by itself after --duration (default 30s) with a summary: requests ok / timed out /
            failed, quotes, alerts delivered, duplicates and lost (both must be 0).
            """,
        options: [
            .value("duration", "DURATION", help: "How long to run: seconds, or 20s, 2m (default 30s)."),
            .flag("quiet", help: "Print only the summary."),
            .flag("no-faults", help: "Run without injecting faults."),
            .flag(
                "tls",
                help: "Speak TLS, with a certificate made at start (OpenSSL's C API); the client verifies it."),
        ]
    )

    private struct Alert: Decodable {
        var symbol: String
        var price: Double
    }

    private struct Tally: Sendable {
        var requestsOK = 0
        var requestsTimedOut = 0
        var requestsFailed = 0
        var quotes = 0
        var alertsEmitted = 0
        var alertDeliveries: [UInt64] = []
        var faults = 0

        var alertsDelivered: Int { Set(alertDeliveries).count }
        var duplicates: Int { alertDeliveries.count - Set(alertDeliveries).count }
    }

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let duration = try arguments.duration("duration") ?? .seconds(30)
        guard duration >= .seconds(5) else { throw UsageError("the demo needs at least 5 seconds") }
        do {
            return try await demo(
                duration: duration, quiet: arguments.flag("quiet"), faults: !arguments.flag("no-faults"),
                tls: arguments.flag("tls"))
        } catch {
            Terminal.standardError.line("longlink demo: \(error)")
            return ExitStatus.failure
        }
    }

    private static func demo(duration: Duration, quiet: Bool, faults: Bool, tls: Bool) async throws -> Int32 {
        let out = Terminal.standardOutput
        let clock = ContinuousClock()
        let start = clock.now
        let tally = Locked(Tally())
        func say(_ kind: String, _ style: Terminal.Style?, _ text: String) {
            guard !quiet else { return }
            let time = String(format: "%6.1fs", (clock.now - start).seconds)
            let label = kind.padding(toLength: 9, withPad: " ", startingAt: 0)
            out.line("\(out.styled(time, .dim))  \(style.map { out.styled(label, $0) } ?? label)  \(text)")
        }

        // The server side: the demo service behind a restartable harness, pushes kept in one store.
        let service = DemoService()
        let store = InMemoryPushStore(capacityPerPrincipal: 100_000)
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
        let harness = LongLinkTestServer(configuration: serverConfiguration, pushStore: { store }) { service.router() }
        let serverAddress = try await harness.start()
        var feedConfiguration = DemoFeed.Configuration()
        feedConfiguration.alertStepCents = 250
        let feed = DemoFeed(service: service, configuration: feedConfiguration)
        let proxy = FaultProxy(upstream: .tcp(host: serverAddress.host, port: serverAddress.port ?? 0))
        let proxyAddress = try await proxy.start()
        say(
            "server", .bold,
            "demo server on \(serverAddress)\(tls ? " (TLS)" : ""), clients connect through the fault proxy on "
                + "\(proxyAddress)")

        // The client side, written as an app would.
        var configuration = ClientConfiguration(endpoints: [.tcp(host: proxyAddress.host, port: proxyAddress.port ?? 0)]
        )
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
        configuration.login = { session in
            _ = try await session.request("login", payload: Array("alice".utf8))
        }
        configuration.subscriptions = [
            Subscription(method: "quotes.subscribe", payload: Array(#"["AAPL","MSFT","TSLA","NVDA","AMZN"]"#.utf8)),
            Subscription(method: "room.enter", payload: Array(#"{"room":42,"user":"alice"}"#.utf8)),
        ]
        let client = LongLinkClient(configuration: configuration)
        let quotes = client.pushes(topic: "quotes")
        let alerts = client.pushes(topic: "alerts")

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
            // The feed: quotes every 100 ms, an alert whenever a price crosses a whole dollar.
            group.addTask {
                while clock.now - start < duration {
                    if let server = harness.server {
                        service.attach(to: server)  // a restart brings a new server instance
                        let report = feed.step(server: server)
                        tally.withLock { $0.alertsEmitted += report.alerts }
                    }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            // Requests: one every 300 ms, alternating an echo and a chat message.
            group.addTask {
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
                            say("request", nil, "#\(number) \(method) ok in \(Self.milliseconds(clock.now - began))")
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
                let schedule: [(Duration, String, @Sendable () async -> Void)] = [
                    (.seconds(4), "cut both sides of the connection", { await proxy.apply(.cut) }),
                    (
                        .seconds(4), "black hole for 2 s (no FIN, no RST: a half-open link)",
                        {
                            await proxy.apply(.blackHole(.both))
                            try? await Task.sleep(for: .seconds(2))
                            await proxy.apply(.restoreForwarding(.both))
                        }
                    ),
                    (
                        .seconds(3), "one-byte writes for 2 s",
                        {
                            await proxy.apply(.splitWrites(into: 1))
                            try? await Task.sleep(for: .seconds(2))
                            await proxy.apply(.splitWrites(into: nil))
                        }
                    ),
                    (
                        .seconds(3), "server restart (GoAway, then a new process on the same port)",
                        {
                            _ = try? await harness.restart(.graceful)
                        }
                    ),
                    (
                        .seconds(4), "server kicks the session (GoAway, come back)",
                        {
                            _ = harness.server?.kick(
                                principal: "alice", code: .unavailable, reason: "session moved", reconnect: true,
                                retryAfter: .milliseconds(100))
                        }
                    ),
                ]
                for (gap, text, fault) in schedule {
                    try await Task.sleep(for: gap)
                    guard clock.now - start < duration - .seconds(4) else { break }
                    tally.withLock { $0.faults += 1 }
                    say("FAULT", .yellow, text)
                    await fault()
                }
            }
            group.addTask {
                while clock.now - start < duration {
                    try await Task.sleep(for: .seconds(2))
                    let now = tally.withLock { $0 }
                    say(
                        "tally", .bold,
                        "requests ok \(now.requestsOK) / timed out \(now.requestsTimedOut) / failed \(now.requestsFailed)"
                            + "   quotes \(now.quotes)   alerts \(now.alertsDelivered)/\(now.alertsEmitted)"
                            + "   duplicates \(now.duplicates)   lost \(max(0, now.alertsEmitted - now.alertsDelivered))"
                    )
                }
            }
            // Let the run end, then give the last alerts a moment to arrive before shutting down.
            try await Task.sleep(for: duration)
            let drainEnd = clock.now.advanced(by: .seconds(15))
            while clock.now < drainEnd, tally.withLock({ $0.alertsDelivered < $0.alertsEmitted }) {
                try await Task.sleep(for: .milliseconds(50))
            }
            client.shutdown()
            group.cancelAll()
        }
        await proxy.stop()
        await harness.stop()

        let final = tally.withLock { $0 }
        let statistics = await client.statistics
        let lost = max(0, final.alertsEmitted - final.alertsDelivered)
        let rows: [[String]] = [
            ["requests ok", "\(final.requestsOK)"],
            ["requests timed out", "\(final.requestsTimedOut)"],
            ["requests failed", "\(final.requestsFailed)"],
            ["quotes received (best effort)", "\(final.quotes)"],
            ["alerts emitted (reliable)", "\(final.alertsEmitted)"],
            ["alerts delivered", "\(final.alertsDelivered)"],
            ["duplicates", "\(final.duplicates)"],
            ["lost", "\(lost)"],
            ["faults injected", "\(final.faults)"],
            ["reconnects", "\(statistics.reconnects)"],
            ["requests resent after reconnect", "\(statistics.resends)"],
        ]
        out.line("")
        out.line(out.styled("summary", .bold))
        out.write(Terminal.columns(rows))
        let good = lost == 0 && final.duplicates == 0
        out.line(
            good
                ? out.styled("lost 0, duplicates 0: every alert arrived exactly once", .green)
                : out.styled("LOST OR DUPLICATED ALERTS", .red))
        return good ? ExitStatus.success : ExitStatus.failure
    }

    private static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f ms", duration.seconds * 1000)
    }
}
