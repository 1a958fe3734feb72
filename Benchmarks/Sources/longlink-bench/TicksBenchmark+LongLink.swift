import LongLink
import LongLinkServer

extension TicksBenchmark {
    /// What one LongLink run of the feed gave.
    struct Measured: Sendable {
        var outcome: TicksOutcome
        /// Updates per second the producer made.
        var producedRate: Double
        /// Best-effort pushes a newer one of the same symbol replaced in the consumer's buffer.
        var conflated: Int
        /// Best-effort pushes dropped: by the client (consumer's buffer full) and by the server
        /// (connection not writable).
        var clientDropped: Int
        var serverDropped: Int
        /// Push frames the client read.
        var received: Int
        /// Links lost: reconnects, plus one if the link was down at the end.
        var disconnections: Int
        /// CPU over the feed, in cores: the server's loop (the producer runs on it) and the
        /// client's loop with the consumer's threads.
        var serverCPU: Double
        var clientCPU: Double
        /// The client's loop alone (reading, decoding, conflating), in cores.
        var clientLoopCPU: Double
        /// The whole process (getrusage), in cores: server, client, app and the bench's own tasks.
        var processCPU: Double
        /// The share of the feed the app spent waiting in `for await` for a push.
        var appWaiting: Double
    }

    /// Runs the feed for the warm-up and the duration through a server and a client of its own,
    /// the consumer spending `options.work` per tick.
    static func longLink(run: Int, _ options: Options, _ settings: BenchSettings) async throws -> Measured {
        let principal = "ticks-\(run)"
        let name = Array(principal.utf8)
        return try await withBenchServer { server in
            try await withBenchClient(port: server.port) { configuration in
                configuration.login = { session in _ = try await session.request("login", payload: name) }
            } _: { bench in
                let droppedBefore = server.server.statistics.bestEffortPushesDropped
                // A trading app's subscription: every symbol's topic, conflated by topic (the default).
                let stream = try bench.client.pushes(matching: TicksFeed.pattern)
                let work = Int64(options.work.inMicroseconds * 1_000)
                let consumer = Task { () -> (takes: [TickTaken], waited: Int64) in
                    var takes: [TickTaken] = []
                    takes.reserveCapacity(1 << 16)
                    var waited: Int64 = 0
                    var idleSince = TicksFeed.monotonic()
                    for await push in stream {
                        let now = TicksFeed.wallClock()
                        waited += TicksFeed.monotonic() - idleSince
                        defer { idleSince = TicksFeed.monotonic() }
                        guard let tick = TicksFeed.decode(push.payload) else { continue }
                        takes.append(
                            TickTaken(
                                time: now, stamp: tick.stamp, symbol: Int32(tick.symbol), update: Int32(tick.update)))
                        TicksFeed.spin(nanoseconds: work)
                    }
                    return (takes, waited)
                }
                let cpuBefore = ProcessUsage.cpuTimeByRole()
                let processBefore = ProcessUsage.cpuTime()
                let feed = await produce(
                    on: server, principal: principal, rate: options.rate, for: settings.warmUp + settings.duration
                ).value
                let cpu = ProcessUsage.cpuTimeByRole(since: cpuBefore)
                let processCPU = ProcessUsage.cpuTime() - processBefore
                // Before the consumer goes: what arrives after it is dropped for want of one.
                let statistics = await bench.client.statistics
                let connected = await bench.client.connectionState.phase == .connected
                consumer.cancel()
                let (takes, waited) = await consumer.value
                let seconds = Double(feed.end - feed.start) / 1e9
                let window = (feed.start + Int64(settings.warmUp.inMicroseconds * 1_000))...feed.end
                return Measured(
                    outcome: TicksOutcome.analyse(produced: feed.produced, takes: takes, window: window),
                    producedRate: Double(feed.produced.reduce(0) { $0 + $1.count }) / seconds,
                    conflated: statistics.bestEffortPushesConflated, clientDropped: statistics.bestEffortPushesDropped,
                    serverDropped: server.server.statistics.bestEffortPushesDropped - droppedBefore,
                    received: statistics.pushesReceived, disconnections: statistics.reconnects + (connected ? 0 : 1),
                    serverCPU: (cpu[.serverLoop] ?? .zero).inSeconds / seconds,
                    clientCPU: ((cpu[.clientLoop] ?? .zero) + (cpu[.callers] ?? .zero)).inSeconds / seconds,
                    clientLoopCPU: (cpu[.clientLoop] ?? .zero).inSeconds / seconds,
                    processCPU: processCPU.inSeconds / seconds, appWaiting: Double(waited) / 1e9 / seconds)
            }
        }
    }

    /// What the producer made: each symbol's stamps (index = update number) and the feed's
    /// start and end, wall-clock nanoseconds.
    struct Produced: Sendable {
        var produced: [[Int64]]
        var start: Int64
        var end: Int64
    }

    /// The feed, on the server's event loop as a feed handler's task would be: every pause it
    /// pushes what the rate owes by then, each update stamped as it is pushed.
    private static func produce(on server: BenchServer, principal: String, rate: Double, for length: Duration)
        -> Task<Produced, Never>
    {
        let longLinkServer = server.server
        return Task(executorPreference: server.group.loops[0]) {
            var feed = TicksFeed()
            var produced = [[Int64]](repeating: [], count: TicksFeed.symbols)
            let clock = ContinuousClock()
            let started = clock.now
            let start = TicksFeed.wallClock()
            var count = 0
            while true {
                let elapsed = clock.now - started
                guard elapsed < length else { break }
                let owed = Int(elapsed.inSeconds * rate) - count
                for _ in 0..<max(0, owed) {
                    let symbol = feed.nextSymbol()
                    let stamp = TicksFeed.wallClock()
                    longLinkServer.pushBestEffort(
                        to: principal, topic: TicksFeed.topics[symbol],
                        payload: TicksFeed.payload(stamp: stamp, symbol: symbol, update: produced[symbol].count))
                    produced[symbol].append(stamp)
                }
                count += max(0, owed)
                try? await Task.sleep(for: TicksFeed.pause)
            }
            return Produced(produced: produced, start: start, end: TicksFeed.wallClock())
        }
    }
}
