import LongLink
import LongLinkTransport
import LongLinkWire
import Synchronization

/// `longlink-bench server`: one server (one event loop per core) holding 2,000 connections, each
/// with one request in flight at a time.
///
/// The baseline is 2,000 raw frame clients over the transport (callbacks on one event loop, no
/// tasks, no actor: Hello, then `echo` again on every response); the LongLink row is 2,000
/// LongLinkClients sharing one event loop, each with a caller task looping on `request("echo")`.
/// Both talk to the same kind of server; the figures are the connections held at the end of the
/// measurement and the requests per second across all of them.
enum ServerBenchmark {
    static let clients = 2_000

    /// What the raw clients share; written on the clients' loop, read from anywhere.
    private final class RawShared: Sendable {
        let responses = BenchCounter()
        let welcomed = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
    }

    /// A client that speaks frames straight over a transport connection.
    private final class RawFrameClient: ConnectionHandler {
        private let shared: RawShared
        private var decoder = FrameDecoder()
        private var frames: [Frame] = []
        private var nextID: UInt64 = 1

        init(shared: RawShared) {
            self.shared = shared
        }

        func begin(_ connection: Connection) {
            connection.write(encoding: {
                Frame.hello(Frame.Hello(clientID: "raw-\(connection.id)")).encodeDelimited(into: &$0)
            })
        }

        private func sendRequest(_ connection: Connection) {
            let id = nextID
            nextID += 1
            connection.write(encoding: {
                Frame.request(
                    Frame.Request(
                        requestID: String(id), method: "echo", payload: benchPayload,
                        timeoutMilliseconds: BaselineClient.timeoutMilliseconds)
                ).encodeDelimited(into: &$0)
            })
        }

        func connection(_ connection: Connection, didRead bytes: UnsafeRawBufferPointer) {
            do {
                try decoder.decode(bytes, into: &frames)
            } catch {
                connection.close(.immediately)
                return
            }
            for frame in frames {
                switch frame {
                case .welcome:
                    shared.welcomed.add(1, ordering: .relaxed)
                    sendRequest(connection)
                case .response:
                    shared.responses.add()
                    if !shared.responses.isStopped { sendRequest(connection) }
                default:
                    break
                }
            }
            frames.removeAll(keepingCapacity: true)
        }

        func connection(_ connection: Connection, didCloseWith error: LongLinkError?) {
            shared.closed.add(1, ordering: .relaxed)
        }
    }

    private struct Outcome {
        var rate: Double
        var held: Int
    }

    /// Connects `count` connections, at most `parallel` at a time.
    private static func connectAll(port: Int, count: Int, loop: EventLoop) async throws -> [Connection] {
        try await withThrowingTaskGroup(of: Connection.self, returning: [Connection].self) { group in
            var connections: [Connection] = []
            connections.reserveCapacity(count)
            var started = 0
            let parallel = 64
            while started < min(parallel, count) {
                group.addTask { try await Connection.connect(to: .tcp(host: "127.0.0.1", port: port), on: loop) }
                started += 1
            }
            while let connection = try await group.next() {
                connections.append(connection)
                if started < count {
                    group.addTask { try await Connection.connect(to: .tcp(host: "127.0.0.1", port: port), on: loop) }
                    started += 1
                }
            }
            return connections
        }
    }

    private static func raw(server: BenchServer, settings: BenchSettings) async throws -> Outcome {
        let group = EventLoopGroup(loopCount: 1, name: "bench-raw")
        let loop = group.loops[0]
        let shared = RawShared()
        let connections: [Connection]
        do {
            connections = try await connectAll(port: server.port, count: clients, loop: loop)
        } catch {
            await group.shutdownAndWait()
            throw error
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                for connection in connections {
                    let client = RawFrameClient(shared: shared)
                    connection.start(handler: client)
                    client.begin(connection)
                }
                continuation.resume()
            }
        }
        let clock = ContinuousClock()
        let limit = clock.now.advanced(by: .seconds(30))
        while shared.welcomed.load(ordering: .relaxed) < clients, clock.now < limit {
            try await Task.sleep(for: .milliseconds(10))
        }
        try await Task.sleep(for: settings.warmUp)
        let (startCount, startTime) = (shared.responses.value, clock.now)
        try await Task.sleep(for: settings.duration)
        let (endCount, endTime) = (shared.responses.value, clock.now)
        let held = shared.welcomed.load(ordering: .relaxed) - shared.closed.load(ordering: .relaxed)
        shared.responses.stop()
        loop.execute {
            for connection in connections { connection.close(.immediately) }
        }
        await group.shutdownAndWait()
        return Outcome(rate: Double(endCount - startCount) / (endTime - startTime).inSeconds, held: held)
    }

    private static func longLink(server: BenchServer, settings: BenchSettings) async throws -> Outcome {
        let group = EventLoopGroup(loopCount: 1, name: "bench-clients")
        var benches: [BenchClient] = []
        benches.reserveCapacity(clients)
        for _ in 0..<clients {
            benches.append(try await BenchClient.connect(port: server.port, group: group, waitUntilConnected: false))
        }
        let all = benches
        let stopAll = {
            await withTaskGroup(of: Void.self) { stopping in
                for bench in all { stopping.addTask { await bench.stop() } }
            }
            await group.shutdownAndWait()
        }
        do {
            for bench in all { try await bench.waitUntilConnected(poll: .milliseconds(20)) }
            let counter = BenchCounter()
            let rate = try await withThrowingTaskGroup(of: Void.self, returning: Double.self) { callers in
                for bench in all {
                    let client = bench.client
                    callers.addTask {
                        while !counter.isStopped {
                            _ = try await client.request("echo", payload: benchPayload)
                            counter.add()
                        }
                    }
                }
                let clock = ContinuousClock()
                try await Task.sleep(for: settings.warmUp)
                let (startCount, startTime) = (counter.value, clock.now)
                try await Task.sleep(for: settings.duration)
                let (endCount, endTime) = (counter.value, clock.now)
                counter.stop()
                try await callers.waitForAll()
                return Double(endCount - startCount) / (endTime - startTime).inSeconds
            }
            var held = 0
            for bench in all where await bench.client.connectionState.phase == .connected { held += 1 }
            await stopAll()
            return Outcome(rate: rate, held: held)
        } catch {
            await stopAll()
            throw error
        }
    }

    static func run(_ settings: BenchSettings, into report: inout BenchReport) async throws {
        let limit = ProcessUsage.raiseOpenFileLimit(to: 4 * clients + 1_024)
        guard limit >= 2 * clients + 256 else {
            throw BenchError("the open-file limit is \(limit); \(2 * clients + 256) are needed")
        }
        let runs = settings.runs
        let loops = BenchMachine.current().cores
        var bare: [Outcome] = []
        var ours: [Outcome] = []
        // A server per run: 2,000 logged-in clients fill its de-dup budget for all clients (100,000
        // entries in the 120 s window) within a few runs on a quiet machine.
        for run in 1...runs {
            try await withBenchServer(loops: loops) { server in
                benchProgress("server: \(clients) raw frame clients, run \(run)/\(runs)")
                bare.append(try await raw(server: server, settings: settings))
                benchProgress("server: \(clients) LongLinkClients, run \(run)/\(runs)")
                ours.append(try await longLink(server: server, settings: settings))
            }
        }
        report.add(
            BenchFigure(
                key: "server.clients_2000.throughput",
                label: "server: requests/s across \(clients) clients, 1 in flight each",
                unit: "req/s", samples: ours.map(\.rate), baselineSamples: bare.map(\.rate),
                note: "LongLinkClients (one shared client loop) vs raw frame clients over the transport (one loop); "
                    + "server with \(loops) event loops"))
        report.add(
            BenchFigure(
                key: "server.clients_2000.held", label: "server: connections held, LongLinkClients",
                unit: "connections",
                samples: ours.map { Double($0.held) }, target: .atLeast(Double(clients), ">= \(clients)")))
        report.add(
            BenchFigure(
                key: "server.clients_2000.held_raw", label: "server: connections held, raw frame clients",
                unit: "connections", samples: bare.map { Double($0.held) },
                target: .atLeast(Double(clients), ">= \(clients)")))
        try await RedisPing.compareServer(settings, into: &report)
    }
}
