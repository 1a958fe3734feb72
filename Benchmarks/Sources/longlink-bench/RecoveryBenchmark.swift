import LongLink
import Synchronization

/// `longlink-bench recovery`: how fast a client comes back after a server restart, and how fast it
/// notices a link that went silent.
///
/// - Restart: a connected client (default backoff: first step up to 250 ms, full jitter); the
///   server is aborted (`abort()`: connections reset, as a crash) and a new server is started on the
///   same port at once; the figure is the time from `abort()` to the first successful request
///   (idempotent, retried on failure). The drawn backoff delays are read from the client's
///   connection states, so the time beyond them (the client's own work) is shown too.
/// - Black hole: a client with a 200 ms heartbeat talks to the server through a relay; the relay
///   starts dropping everything in both directions without closing anything; the figure is the
///   time until the client leaves the `connected` state, in heartbeat intervals.
enum RecoveryBenchmark {
    static let heartbeat = Duration.milliseconds(200)

    /// The client's connection states with the time each one was seen.
    private final class StateLog: Sendable {
        private let entries = Mutex<[(at: ContinuousClock.Instant, state: ConnectionState)]>([])

        func record(_ state: ConnectionState) {
            let now = ContinuousClock.now
            entries.withLock { $0.append((now, state)) }
        }

        func since(_ instant: ContinuousClock.Instant) -> [(at: ContinuousClock.Instant, state: ConnectionState)] {
            entries.withLock { $0.filter { $0.at >= instant } }
        }

        static func observe(_ client: LongLinkClient) -> (StateLog, Task<Void, Never>) {
            let log = StateLog()
            let states = client.connectionStates
            let task = Task {
                for await state in states {
                    log.record(state)
                    if Task.isCancelled { break }
                }
            }
            return (log, task)
        }
    }

    private struct Restart {
        var total: Double
        var drawnDelays: Double
        var attempts: Int
        var roundTrip: Double
    }

    private static func restartOnce() async throws -> Restart {
        let clock = ContinuousClock()
        let first = try await BenchServer.start()
        let port = first.port
        let bench = try await BenchClient.connect(port: port)
        let client = bench.client
        var replacement: BenchServer?
        do {
            var roundTrips: [Double] = []
            for _ in 0..<50 {
                let sent = clock.now
                _ = try await client.request("echo", payload: benchPayload)
                roundTrips.append((clock.now - sent).inMilliseconds)
            }
            let (log, observer) = StateLog.observe(client)
            try await Task.sleep(for: .milliseconds(50))
            let aborted = clock.now
            await first.abort()
            await first.releaseLoops()
            replacement = try await BenchServer.start(port: port)
            let options = RequestOptions(timeout: .seconds(10), idempotent: true)
            while true {
                do {
                    _ = try await client.request("echo", payload: benchPayload, options: options)
                    break
                } catch {
                    guard clock.now - aborted < .seconds(30) else {
                        throw BenchError("no recovery within 30 s: \(error)")
                    }
                }
            }
            let recovered = clock.now
            observer.cancel()
            let states = log.since(aborted).map(\.state)
            let delays = states.filter { $0.phase == .waitingToReconnect }.compactMap(\.retryDelay)
            let attempts = states.filter { $0.phase == .connecting }.count
            await bench.stop()
            await replacement?.stop()
            return Restart(
                total: (recovered - aborted).inMilliseconds,
                drawnDelays: delays.reduce(Duration.zero, +).inMilliseconds, attempts: attempts,
                roundTrip: BenchStats.median(roundTrips))
        } catch {
            await bench.stop()
            await replacement?.stop()
            throw error
        }
    }

    /// Milliseconds from aborting the server the client chose (of three on loopback) to the first
    /// successful request on another.
    private static func failoverOnce() async throws -> Double {
        var servers: [BenchServer] = []
        for index in 0..<3 { servers.append(try await BenchServer.start { $0.serverID = "\(index)" }) }
        let ports = servers.map(\.port)
        let bench = try await BenchClient.connect(port: ports[0]) { configuration in
            configuration.endpoints = ports.map { .tcp(host: "127.0.0.1", port: $0) }
        }
        return try await timeFailover(of: bench, among: servers)
    }

    /// Milliseconds from aborting the server `bench`'s client is on (its `server` method names it
    /// by index in `servers`) to the first successful request on another; stops everything after.
    static func timeFailover(of bench: BenchClient, among servers: [BenchServer]) async throws -> Double {
        let clock = ContinuousClock()
        do {
            guard let chosen = Int(String(decoding: try await bench.client.request("server"), as: UTF8.self)),
                servers.indices.contains(chosen)
            else { throw BenchError("the client's server did not name itself by index") }
            let aborted = clock.now
            await servers[chosen].abort()
            let options = RequestOptions(timeout: .seconds(10), idempotent: true)
            while true {
                if let bytes = try? await bench.client.request("server", options: options),
                    let id = Int(String(decoding: bytes, as: UTF8.self)), id != chosen
                {
                    break
                }
                guard clock.now - aborted < .seconds(30) else { throw BenchError("no failover within 30 s") }
            }
            let total = (clock.now - aborted).inMilliseconds
            await bench.stop()
            for (index, server) in servers.enumerated() {
                if index == chosen { await server.releaseLoops() } else { await server.stop() }
            }
            return total
        } catch {
            await bench.stop()
            for server in servers { await server.stop() }
            throw error
        }
    }

    /// Milliseconds from the black hole to the client leaving `connected`.
    private static func blackHoleOnce() async throws -> Double {
        try await withBenchServer { server in
            let relay = try await BlackHoleRelay.start(upstreamPort: server.port)
            let bench: BenchClient
            do {
                bench = try await BenchClient.connect(port: relay.port) { $0.heartbeat = heartbeat }
            } catch {
                await relay.close()
                throw error
            }
            let (log, observer) = StateLog.observe(bench.client)
            let clock = ContinuousClock()
            var detected: Double?
            do {
                _ = try await bench.client.request("echo", payload: benchPayload)
                try await Task.sleep(for: heartbeat * 3)
                let start = clock.now
                relay.blackHole()
                while clock.now - start < heartbeat * 10 {
                    if let change = log.since(start).first(where: { $0.state.phase != .connected }) {
                        detected = (change.at - start).inMilliseconds
                        break
                    }
                    try await Task.sleep(for: .milliseconds(1))
                }
            } catch {
                observer.cancel()
                await relay.close()
                await bench.stop()
                throw error
            }
            observer.cancel()
            await relay.close()
            await bench.stop()
            guard let detected else {
                throw BenchError("the black hole was not detected within 10 heartbeat intervals")
            }
            return detected
        }
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let runs = settings.runs
        var restarts: [Restart] = []
        var detections: [Double] = []
        var failovers: [Double] = []
        for run in 1...runs {
            benchProgress("recovery: failover, run \(run)/\(runs)")
            failovers.append(try await failoverOnce())
            benchProgress("recovery: server restart, run \(run)/\(runs)")
            restarts.append(try await restartOnce())
            benchProgress("recovery: black hole, run \(run)/\(runs)")
            detections.append(try await blackHoleOnce())
        }
        let step = Backoff().bound(forAttempt: 0).inMilliseconds
        let roundTrip = BenchStats.median(restarts.map(\.roundTrip))
        report.add(
            BenchFigure(
                key: "recovery.restart.first_success", label: "recovery: server restart to first successful request",
                unit: "ms", samples: restarts.map(\.total),
                target: .atMost(
                    step + roundTrip,
                    "<= 1 backoff step + 1 RTT (\(BenchReport.number(step)) + \(BenchReport.number(roundTrip)) ms)"),
                note: "default backoff: the first delay is drawn from 0...\(BenchReport.number(step)) ms (full jitter)")
        )
        report.add(
            BenchFigure(
                key: "recovery.restart.drawn_backoff", label: "recovery: backoff delays drawn by the client",
                unit: "ms",
                samples: restarts.map(\.drawnDelays),
                note:
                    "connection attempts per recovery: \(restarts.map { String($0.attempts) }.joined(separator: ", "))")
        )
        report.add(
            BenchFigure(
                key: "recovery.restart.beyond_backoff",
                label: "recovery: restart to first success, minus the drawn delays",
                unit: "ms", samples: restarts.map { $0.total - $0.drawnDelays }))
        let stagger = Balancing().raceStagger.inMilliseconds
        report.add(
            BenchFigure(
                key: "recovery.failover.first_success",
                label: "recovery: chosen server killed to first success on another", unit: "ms", samples: failovers,
                target: .atMost(
                    step + stagger,
                    "<= 1 backoff step + the race's stagger (\(BenchReport.number(step)) + \(BenchReport.number(stagger)) ms)"
                ),
                note: "three servers on loopback; the chosen one aborted (connections reset, port closed)"))
        report.add(
            BenchFigure(
                key: "recovery.black_hole.detection", label: "recovery: black-holed link detected after",
                unit: "intervals",
                samples: detections.map { $0 / heartbeat.inMilliseconds }, target: .atMost(2.5, "<= 2.5 intervals"),
                note:
                    "heartbeat \(BenchReport.number(heartbeat.inMilliseconds)) ms, through a relay that drops all bytes"
            ))
        report.add(
            BenchFigure(
                key: "recovery.black_hole.detection_ms", label: "recovery: black-holed link detected after", unit: "ms",
                samples: detections))
    }
}
