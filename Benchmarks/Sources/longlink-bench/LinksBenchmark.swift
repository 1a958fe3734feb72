import BenchCLISupport
import Foundation
@_spi(Benchmarks) import LongLinkTesting

/// `longlink-bench links`: one server process holding N logged-in links, what they cost, and the
/// reconnect storm when the server is killed and started again on its data directory.
///
/// Processes: the server is ``LinksServer`` (this executable again, `_links-server`), the links are
/// ``LinkClients`` (`_links-clients`, ``linksPerProcess`` each); every process here may hold at
/// most `ulimit -n` descriptors (20,000 on the machine this was written on), which bounds N. The
/// same count of idle connections is then held by redis-server and by nats-server (when
/// installed) from the same kind of client processes, for their memory and idle CPU beside ours.
///
/// The storm (``LinksBenchmark+Storm.swift``): SIGKILL to the server, the same server started
/// again on the same port and data directory; every link comes back on the library's backoff.
enum LinksBenchmark {
    static let defaultLinks = 10_000
    static let defaultIdle = Duration.seconds(30)
    static let linksPerProcess = 5_000

    /// What the command line asks of the scenario.
    struct Options: Sendable {
        var links = LinksBenchmark.defaultLinks
        var idle = LinksBenchmark.defaultIdle
    }

    /// The figures one holding of N connections gives.
    struct Held {
        var memoryPerLink: Double
        var rss: Double
        var idleCPUPerLinkMinute: Double
        var idleNote: String
        var connectSeconds: Double
        var load: String
    }

    static func run(_ settings: BenchSettings, _ options: Options, into report: inout BenchReport) async throws {
        let links = options.links
        // Commands go to the children's standard input: one that died must fail the write, not end this process.
        signal(SIGPIPE, SIG_IGN)
        let limit = ProcessUsage.raiseOpenFileLimit(to: 1 << 20)
        guard links + 256 <= limit else {
            throw BenchError(
                "--links \(links) needs \(links + 256) descriptors in the server; ulimit -n gives \(limit)")
        }
        let processes = (links + linksPerProcess - 1) / linksPerProcess
        report.notes.append(
            "links: each process here may hold \(limit) descriptors (ulimit -n): one server process holds all \(links) "
                + "links, \(processes) client process(es) of at most \(linksPerProcess) hold the other ends, bound to "
                + "sources across 127.0.0.0/8 (\(LinkClients.linksPerAddress) per address); the client is a bare "
                + "protocol client (Hello, login, Subscribe, Sync, Pings at the Welcome's interval; one poll loop per "
                + "process), not LongLinkClient; the server is longlink-bench's own in a child process, durable store "
                + "synced every second, \(BenchMachine.current().cores) event loops; one run")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "longlink-links-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        benchProgress("links: starting the server")
        var server = try await startServer(directory: directory.path, port: 0, capacity: links)
        var clients: [LinksChild] = []
        let held: Held
        let storm: Storm
        do {
            held = try await hold(links, kind: .longLink, port: server.port, pid: server.child.pid, options) {
                clients = $0
            }
            storm = try await Storm.run(links: links, clients: clients, server: &server, directory: directory.path)
        } catch {
            for client in clients { await client.kill() }
            await server.child.kill()
            throw error
        }
        for client in clients { client.send("quit") }
        for client in clients { await client.kill() }
        await server.child.kill()
        let (redis, nats) = try await peers(links, options, notes: &report.notes)
        add(held, kind: "LongLink", key: "links", links: links, against: (redis, nats), into: &report)
        if let redis { add(redis, kind: "redis-server", key: "links.redis", links: links, into: &report) }
        if let nats { add(nats, kind: "nats-server", key: "links.nats", links: links, into: &report) }
        storm.add(links: links, into: &report)
    }

    /// A started server process and its port.
    struct Server {
        var child: LinksChild
        var port: Int
    }

    static func startServer(directory: String, port: Int, capacity: Int) async throws -> Server {
        let child = try LinksChild(
            LinksServer.scenarioName,
            environment: [
                LinksServer.directoryVariable: directory, LinksServer.portVariable: String(port),
                LinksServer.capacityVariable: String(capacity),
            ])
        do {
            let line = try await child.line(startingWith: "listening ", within: .seconds(60))
            guard let port = Int(line.dropFirst("listening ".count)) else { throw BenchError("bad line: \(line)") }
            return Server(child: child, port: port)
        } catch {
            await child.kill()
            throw error
        }
    }

    /// Starts the client processes against `port` and waits until every link is up; measures the
    /// memory process `pid` gained, then its CPU over `options.idle`. `started` gets the clients
    /// as soon as they exist (the caller stops them).
    static func hold(
        _ links: Int, kind: LinkClients.Kind, port: Int, pid: Int32, _ options: Options,
        started: ([LinksChild]) -> Void
    ) async throws -> Held {
        try await Task.sleep(for: .milliseconds(500))
        let before = LinksChild.residentBytes(of: pid)
        let start = ContinuousClock.now
        var clients: [LinksChild] = []
        defer { started(clients) }
        for first in stride(from: 0, to: links, by: linksPerProcess) {
            clients.append(
                try LinksChild(
                    LinkClients.scenarioName,
                    environment: [
                        LinkClients.kindVariable: kind.rawValue, LinkClients.portVariable: String(port),
                        LinkClients.firstVariable: String(first),
                        LinkClients.countVariable: String(min(linksPerProcess, links - first)),
                    ]))
        }
        started(clients)
        benchProgress("links: \(links) \(kind.rawValue) links connecting from \(clients.count) process(es)")
        for client in clients { _ = try await client.line(startingWith: "ready", within: .seconds(120 + links / 100)) }
        let connectSeconds = (ContinuousClock.now - start).inSeconds
        // Let the store's interval sync and the allocator settle.
        try await Task.sleep(for: .seconds(2))
        let rss = LinksChild.residentBytes(of: pid)
        benchProgress(
            "links: \(links) \(kind.rawValue) links up in \(String(format: "%.1f", connectSeconds)) s; idle for \(options.idle)"
        )
        let load = LinksChild.loadAverage()
        let pingsBefore = try await pings(clients)
        let cpuBefore = LinksChild.cpuSeconds(of: pid)
        let idleStart = ContinuousClock.now
        try await Task.sleep(for: options.idle)
        let cpu = LinksChild.cpuSeconds(of: pid) - cpuBefore
        let elapsed = (ContinuousClock.now - idleStart).inSeconds
        let pingsAfter = try await pings(clients)
        let pingsSeen = pingsAfter.count - pingsBefore.count
        // Links that came up together ping together: a window shorter than the interval may see
        // none or all of them. Where pings were sent, the figure is the CPU per ping at the
        // interval's rate; otherwise (Redis, NATS: no pings) the window's CPU scaled to a minute.
        let perLinkMinute: Double
        var idleNote = "process CPU over \(String(format: "%.1f", elapsed)) s idle, scaled to a minute, / \(links)"
        if pingsSeen > 0, pingsAfter.interval > 0 {
            perLinkMinute = cpu / Double(pingsSeen) * 60 / pingsAfter.interval
            idleNote =
                "process CPU over \(String(format: "%.1f", elapsed)) s idle / the \(pingsSeen) pings sent meanwhile "
                + "(\(String(format: "%.1f", cpu / Double(pingsSeen) * 1e6)) µs each), x \(Int(60 / pingsAfter.interval)) "
                + "pings per link per minute (heartbeat \(Int(pingsAfter.interval)) s)"
        } else {
            perLinkMinute = cpu / elapsed * 60 / Double(links)
        }
        return Held(
            memoryPerLink: (rss - before) / Double(links), rss: rss, idleCPUPerLinkMinute: perLinkMinute * 1e6,
            idleNote: idleNote, connectSeconds: connectSeconds,
            load: "\(load) at the start, \(LinksChild.loadAverage()) at the end")
    }

    /// Pings the client processes have sent so far, and the heartbeat interval (seconds).
    static func pings(_ clients: [LinksChild]) async throws -> (count: Int, interval: Double) {
        var count = 0
        var interval = 0.0
        for client in clients { client.send("pings") }
        for client in clients {
            let fields = try await client.line(startingWith: "pings ", within: .seconds(30)).split(separator: " ")
            count += fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            interval = max(interval, fields.count > 2 ? Double(fields[2]) ?? 0 : 0)
        }
        return (count, interval)
    }

    /// Adds `held`'s rows; with `against`, LongLink's memory per link beside Redis's (the row's
    /// baseline) and NATS's (a row of its own) per idle connection, the issue's target: a logged-in,
    /// subscribed link holding pushes takes no more than their idle connection.
    static func add(
        _ held: Held, kind: String, key: String, links: Int, against: (redis: Held?, nats: Held?) = (nil, nil),
        into report: inout BenchReport
    ) {
        let memoryNote =
            "(RSS with \(links) links up - RSS before) / \(links); RSS \(Int(held.rss / 1_048_576)) MiB; load \(held.load)"
        let redis = against.redis.map { [$0.memoryPerLink] }
        report.add(
            BenchFigure(
                key: "\(key).memory_per_link", label: "\(kind): server memory per held link", unit: "B",
                samples: [held.memoryPerLink], baselineSamples: redis,
                target: redis == nil ? nil : .ratioAtMost(1, "<= Redis's idle connection"),
                note: memoryNote + (redis == nil ? "" : "; baseline: redis-server, the same count of idle connections"))
        )
        if let nats = against.nats {
            report.add(
                BenchFigure(
                    key: "\(key).memory_per_link_against_nats", label: "\(kind): memory per held link against NATS",
                    unit: "B", samples: [held.memoryPerLink], baselineSamples: [nats.memoryPerLink],
                    target: .ratioAtMost(1, "<= NATS's idle connection"),
                    note: "baseline: nats-server, the same count of idle connections (CONNECT, PING)"))
        }
        report.add(
            BenchFigure(
                key: "\(key).idle_cpu_per_link_minute", label: "\(kind): server CPU per link per minute, idle",
                unit: "µs", samples: [held.idleCPUPerLinkMinute],
                note: "\(held.idleNote); load \(held.load)"))
        report.add(
            BenchFigure(
                key: "\(key).connect_seconds", label: "\(kind): time until all \(links) links are up", unit: "s",
                samples: [held.connectSeconds], note: "at most 512 connects under way per client process"))
    }

    /// The same count of idle connections on redis-server and nats-server, when installed.
    static func peers(_ links: Int, _ options: Options, notes: inout [String]) async throws -> (
        redis: Held?, nats: Held?
    ) {
        var redisHeld: Held?
        if case .success(let tools) = RedisTools.find(in: nil, neededBy: "links' Redis rows") {
            benchProgress("links: redis-server")
            redisHeld = try await LocalRedisServer.with(
                tools, extraArguments: ["--maxclients", String(links + 64), "--protected-mode", "no"]
            ) { redis in
                var clients: [LinksChild] = []
                do {
                    let held = try await hold(links, kind: .redis, port: redis.port, pid: redis.pid, options) {
                        clients = $0
                    }
                    for client in clients { await client.kill() }
                    return held
                } catch {
                    for client in clients { await client.kill() }
                    throw error
                }
            }
        } else {
            notes.append("links: Redis rows skipped: redis-server not found on the PATH or in /usr/bin")
        }
        guard let natsServer = NATSPeer.locate("nats-server") ?? NATSPeer.locate("nats-server", path: "/usr/sbin")
        else {
            notes.append(
                "links: NATS rows skipped: nats-server not on the PATH or in /usr/sbin (\(NATSPeer.install))")
            return (redisHeld, nil)
        }
        benchProgress("links: nats-server")
        let port = try await freePort()
        let nats = try ChildProcess(
            natsServer, arguments: ["-a", "127.0.0.1", "-p", String(port)], standardInput: .nullDevice,
            standardOutput: .nullDevice, standardError: .nullDevice)
        var clients: [LinksChild] = []
        let natsHeld: Held
        do {
            try await Task.sleep(for: .milliseconds(500))
            natsHeld = try await hold(links, kind: .nats, port: port, pid: nats.processIdentifier, options) {
                clients = $0
            }
        } catch {
            for client in clients { await client.kill() }
            nats.kill()
            throw error
        }
        for client in clients { await client.kill() }
        nats.kill()
        _ = await nats.waitForExit(within: .seconds(10))
        return (redisHeld, natsHeld)
    }
}
