import BenchCLISupport
import Foundation
@_spi(Benchmarks) import LongLink
@_spi(Benchmarks) import LongLinkServer
import LongLinkTransport
import Synchronization

/// What every network scenario gets from the command line.
struct BenchSettings: Sendable {
    /// How long one measurement lasts (after its warm-up).
    var duration: Duration
    /// How many times each measurement is repeated; the report shows the median.
    var runs: Int
    /// `--in-flight`: rpc measures throughput at this level only (and no latency).
    var onlyInFlight: Int? = nil
    /// `--design`: with `--in-flight`, only this design is measured.
    var onlyDesign: RPCDesign? = nil
    /// `--redis-bin`: where `fleet` finds redis-server and redis-benchmark (nil: the PATH, /usr/bin).
    var redisDirectory: String? = nil
    /// `--cluster`: `fleet` runs on a Redis Cluster (``FleetClusterBenchmark``).
    var redisCluster = false
    /// `--links`, `--idle`: what `links` holds and how long it measures idle CPU.
    var links = LinksBenchmark.Options()
    /// `--tick-work`, `--tick-rate`: the `ticks` consumer's work per tick and the feed's rate.
    var ticks = TicksBenchmark.Options()

    /// The warm-up before each measurement: a quarter of it, between 50 ms and 500 ms.
    var warmUp: Duration {
        min(.milliseconds(500), max(.milliseconds(50), duration / 4))
    }
}

/// What `longlink-bench rpc --in-flight N` measures side by side; `--design` picks one.
enum RPCDesign: String, CaseIterable, Sendable {
    /// The bare baseline client.
    case baseline
    /// The deadline heap (`DeadlineStrategy.deadlineHeap`), callers on the global executor.
    case heap
    /// The task-group race (the default), callers on the global executor.
    case group
    /// The deadline heap with the callers' tasks on the client's own loop.
    case loop

    /// The design's part of a figure's key: `default` for the task-group race (the card's default).
    var key: String {
        switch self {
        case .group: "default"
        case .loop: "on_loop"
        case .baseline, .heap: rawValue
        }
    }
}

/// A failure of the benchmark itself (not a figure).
struct BenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// One throughput measurement: the rate, and the CPU time the whole process (server and client,
/// all threads) spent per request over the same window. CPU per request holds still when other
/// work on the machine makes the rate swing.
struct ThroughputSample: Sendable {
    var rate: Double
    var cpuMicrosecondsPerRequest: Double
    /// ``cpuMicrosecondsPerRequest`` split by the threads' roles (see ``ProcessUsage/ThreadRole``).
    var cpuByRole: [ProcessUsage.ThreadRole: Double] = [:]
    /// The cross-core round trips probed during the window (``CrossCoreProbe``), in nanoseconds;
    /// empty where they cannot be measured.
    var crossCoreProbes: [Double] = []

    /// The share of the window's probes that found the far placement; nil without probes.
    var farShare: Double? { CrossCoreProbe.farShare(of: crossCoreProbes) }

    init(
        requests: Int, elapsed: Duration, cpu: Duration,
        cpuByRole: [ProcessUsage.ThreadRole: Duration] = [:]
    ) {
        rate = Double(requests) / elapsed.inSeconds
        cpuMicrosecondsPerRequest = requests > 0 ? cpu.inSeconds * 1e6 / Double(requests) : .nan
        for (role, time) in cpuByRole where requests > 0 {
            self.cpuByRole[role] = time.inSeconds * 1e6 / Double(requests)
        }
    }
}

/// A stop flag and a counter shared by the tasks or threads of one measurement.
final class BenchCounter: Sendable {
    private let count = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)

    func add(_ amount: Int = 1) {
        count.add(amount, ordering: .relaxed)
    }

    var value: Int { count.load(ordering: .relaxed) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    var isStopped: Bool { stopped.load(ordering: .relaxed) }
}

/// Request counts kept per caller, each on its own cache line.
///
/// One shared counter is one cache line that every request writes: when the callers run on two
/// cores, that line moves between them on every request, and the measurement itself costs the
/// callers a cross-core transfer per request that the single-threaded bare client never pays.
final class BenchTallies: Sendable {
    /// One caller's count, padded so that two tallies allocated side by side share no line.
    final class Tally: Sendable {
        private let count = Atomic<Int>(0)
        private let padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

        func add() {
            count.add(1, ordering: .relaxed)
        }

        var value: Int { count.load(ordering: .relaxed) }
    }

    let tallies: [Tally]

    init(count: Int) {
        tallies = (0..<count).map { _ in Tally() }
    }

    /// The sum over every caller.
    var value: Int { tallies.reduce(0) { $0 + $1.value } }
}

/// Numbers the principals ``BenchClient`` logs in as, one per client.
private let benchPrincipals = Atomic<Int>(0)

/// The payload of every `echo` call: 16 bytes, the size of a small business request.
let benchPayload: [UInt8] = Array(0..<16)

/// The server side of a scenario: a ``LongLinkServer`` on 127.0.0.1 with its own event loops.
///
/// Methods: `echo` (returns the payload), `never` (never answers: waits until cancelled) and
/// `login` (binds the connection to the principal named by the payload), and whatever a scenario
/// adds with `routes`.
struct BenchServer: Sendable {
    let server: LongLinkServer
    let group: EventLoopGroup
    let port: Int
    private let runTask: Task<Void, Never>

    static func router(serverID: String = "bench") -> Router {
        var router = Router()
        // Echo answers inline on the loop (no task per request), as a cache read or lookup would.
        router.register("echo", synchronous: { payload, _ in payload })
        router.register("never") { _, _ in
            await suspendUntilCancelled()
            throw CancellationError()
        }
        router.register("login") { payload, context in
            context.bind(principal: String(decoding: payload, as: UTF8.self))
            return []
        }
        router.register("server", synchronous: { _, _ in Array(serverID.utf8) })
        return router
    }

    /// Starts a server with `loops` event loops; `configure` adjusts its configuration and `routes`
    /// adds methods to ``router()``'s. The server keeps pushes (and, with a fleet's, the de-dup
    /// window) in `stores`.
    static func start(
        port: Int = 0, loops: Int = 1, stores: ServerStores = .inMemory(),
        configure: (inout ServerConfiguration) -> Void = { _ in }, routes: (inout Router) -> Void = { _ in }
    ) async throws -> BenchServer {
        let group = EventLoopGroup(loopCount: loops, name: "bench-server")
        var configuration = ServerConfiguration()
        configuration.endpoint = .tcp(host: "127.0.0.1", port: port)
        configuration.eventLoopGroup = group
        configure(&configuration)
        var router = router(serverID: configuration.serverID)
        routes(&router)
        let server = LongLinkServer(configuration: configuration, router: router, stores: stores)
        let runTask = Task {
            do {
                try await server.run()
            } catch {
                Terminal.standardError.line("longlink-bench: the server stopped: \(error)")
            }
        }
        let address: SocketAddress
        do {
            address = try await server.localAddress
        } catch {
            await group.shutdownAndWait()
            throw error
        }
        guard let port = address.port else { throw BenchError("the server has no port: \(address)") }
        return BenchServer(server: server, group: group, port: port, runTask: runTask)
    }

    /// Shuts down gracefully and waits.
    func stop() async {
        server.shutdown()
        await runTask.value
        await group.shutdownAndWait()
    }

    /// Aborts (as a crash would) and waits until the port is free; the loops stay up.
    func abort() async {
        server.abort()
        await runTask.value
    }

    /// The loops only: after ``abort()``.
    func releaseLoops() async {
        await group.shutdownAndWait()
    }
}

/// A running ``LongLinkClient`` on 127.0.0.1.
struct BenchClient: Sendable {
    let client: LongLinkClient
    /// The group the benchmark created for this client alone (shut down by ``stop()``).
    private let ownedGroup: EventLoopGroup?
    private let runTask: Task<Void, Never>

    /// The client's event loop.
    var loop: EventLoop? { ownedGroup?.loops.first }

    /// Connects to 127.0.0.1:`port`, logged in as a principal of its own unless `configure` sets
    /// another login, and waits until the client is logged in and ready.
    ///
    /// - Parameter group: the loops to use; `nil` gives the client a loop of its own.
    static func connect(
        port: Int, group: EventLoopGroup? = nil, waitUntilConnected: Bool = true,
        configure: (inout ClientConfiguration) -> Void = { _ in }
    ) async throws -> BenchClient {
        let ownedGroup = group == nil ? EventLoopGroup(loopCount: 1, name: "bench-client") : nil
        var configuration = ClientConfiguration(endpoints: [.tcp(host: "127.0.0.1", port: port)])
        configuration.eventLoopGroup = group ?? ownedGroup
        // Logged in as its own principal, as an app is: the server de-duplicates only a logged-in
        // session's requests, so every request row pays for the de-dup window users run with.
        let principal = Array("bench-\(benchPrincipals.add(1, ordering: .relaxed).newValue)".utf8)
        configuration.login = { session in _ = try await session.request("login", payload: principal) }
        configure(&configuration)
        let client = LongLinkClient(configuration: configuration)
        let runTask = Task {
            do {
                try await client.run()
            } catch {
                Terminal.standardError.line("longlink-bench: a client stopped: \(error)")
            }
        }
        let bench = BenchClient(client: client, ownedGroup: ownedGroup, runTask: runTask)
        if waitUntilConnected {
            try await bench.waitUntilConnected()
        }
        return bench
    }

    func waitUntilConnected(within limit: Duration = .seconds(30), poll: Duration = .milliseconds(2)) async throws {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while await client.connectionState.phase != .connected {
            guard ContinuousClock.now < deadline else {
                throw BenchError("a client did not connect within \(limit): \(await client.connectionState)")
            }
            try await Task.sleep(for: poll)
        }
    }

    /// Shuts the client down and waits; cancels it when a graceful shutdown takes too long.
    func stop() async {
        client.shutdown()
        let runTask = self.runTask
        let watchdog = Task {
            try await Task.sleep(for: .seconds(3))
            runTask.cancel()
        }
        await runTask.value
        watchdog.cancel()
        await ownedGroup?.shutdownAndWait()
    }
}

/// Runs `body` with a fresh server and stops the server afterwards, also when `body` throws.
func withBenchServer<Value>(
    loops: Int = 1, stores: ServerStores = .inMemory(),
    configure: (inout ServerConfiguration) -> Void = { _ in }, routes: (inout Router) -> Void = { _ in },
    _ body: (BenchServer) async throws -> Value
) async throws -> Value {
    let server = try await BenchServer.start(
        loops: loops, stores: stores, configure: configure, routes: routes)
    do {
        let value = try await body(server)
        await server.stop()
        return value
    } catch {
        await server.stop()
        throw error
    }
}

/// Runs `body` with a connected client and stops the client afterwards, also when `body` throws.
func withBenchClient<Value>(
    port: Int, configure: (inout ClientConfiguration) -> Void = { _ in },
    _ body: (BenchClient) async throws -> Value
) async throws -> Value {
    let client = try await BenchClient.connect(port: port, configure: configure)
    do {
        let value = try await body(client)
        await client.stop()
        return value
    } catch {
        await client.stop()
        throw error
    }
}

/// Runs `body` on a new plain thread (no tasks, no executor) and returns what it returns.
func onPlainThread<Value: Sendable>(
    _ name: String, _ body: @escaping @Sendable () throws -> Value
) async throws -> Value {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
        let thread = Thread {
            // Foundation names a thread only for its own bookkeeping on Linux; the kernel's name is
            // what /proc (and ``ProcessUsage/cpuTimeByRole()``) reads.
            #if os(Linux)
                try? String(name.prefix(15)).write(toFile: "/proc/thread-self/comm", atomically: false, encoding: .utf8)
            #endif
            continuation.resume(with: Result { try body() })
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Which of a child's outputs ``runChild(_:_:arguments:environment:capture:)`` returns; the other is discarded.
enum ChildOutput: Sendable {
    case standardOutput
    case standardError
}

/// Runs `executable` to its end on a plain thread; returns its exit status and the output `capture` names.
/// A child still running after `limit` is killed (its status then says so), so that a hung peer
/// cannot hang the run.
func runChild(
    _ name: String, _ executable: String, arguments: [String], environment: [String: String]? = nil,
    capture: ChildOutput, killedAfter limit: Duration? = nil
) async throws -> (status: Int32, output: String) {
    try await onPlainThread(name) { () throws -> (status: Int32, output: String) in
        let process = try ChildProcess(
            executable, arguments: arguments, environment: environment, standardInput: .nullDevice,
            standardOutput: capture == .standardOutput ? .pipe : .nullDevice,
            standardError: capture == .standardError ? .pipe : .nullDevice)
        if let limit {
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.inSeconds) { process.kill() }
        }
        let data = (process.standardOutput ?? process.standardError)!.readDataToEndOfFile()
        return (process.waitUntilExit(), String(decoding: data, as: UTF8.self))
    }
}

/// What the process uses: resident memory and CPU time.
enum ProcessUsage {
    /// Resident set size in bytes, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// What a thread of the bench process does, told by its name.
    enum ThreadRole: String, Sendable {
        /// The in-process server's event loop (`bench-server-N`).
        case serverLoop = "server loop"
        /// The client's event loop (`bench-client-N`).
        case clientLoop = "client loop"
        /// The global executor's threads, where the callers run (libdispatch names them by QoS).
        case callers = "callers' threads"
        /// The bare baseline client's plain thread (`baseline`).
        case bareClient = "bare client's thread"
        case other
    }

    /// CPU time of each thread role, from /proc/self/task (empty where that does not exist): the
    /// scheduler's nanosecond run time (`schedstat`) where the kernel keeps it, else user plus
    /// system time in clock ticks (10 ms each, too coarse for windows under a second).
    static func cpuTimeByRole() -> [ThreadRole: Duration] {
        var times: [ThreadRole: Duration] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"),
                let time = threadCPUTime(task: task, stat: stat[stat.index(after: close)...])
            else { continue }
            let name = stat[stat.index(after: open)..<close]
            let role: ThreadRole =
                name.hasPrefix("bench-server")
                ? .serverLoop
                : name.hasPrefix("bench-client")
                    ? .clientLoop
                    : name.hasPrefix("baseline") ? .bareClient : name.contains("qos") ? .callers : .other
            times[role, default: .zero] += time
        }
        return times
    }

    /// The CPU time each role used since `start` (an earlier ``cpuTimeByRole()``).
    static func cpuTimeByRole(since start: [ThreadRole: Duration]) -> [ThreadRole: Duration] {
        cpuTimeByRole().reduce(into: [:]) { $0[$1.key] = $1.value - (start[$1.key] ?? .zero) }
    }

    /// One thread's CPU time: `schedstat`'s first field (nanoseconds on a CPU), or else `stat`'s
    /// utime and stime (fields 14 and 15, the 12th and 13th after the name, in clock ticks).
    private static func threadCPUTime(task: String, stat afterName: Substring) -> Duration? {
        if let schedstat = try? String(contentsOfFile: "/proc/self/task/\(task)/schedstat", encoding: .utf8),
            let first = schedstat.split(separator: " ").first, let nanoseconds = Int64(first)
        {
            return .nanoseconds(nanoseconds)
        }
        let fields = afterName.split(separator: " ")
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 12, ticksPerSecond > 0, let user = Double(fields[11]), let system = Double(fields[12])
        else { return nil }
        return .seconds((user + system) / ticksPerSecond)
    }

    /// User plus system CPU time of the whole process.
    static func cpuTime() -> Duration {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func duration(_ time: timeval) -> Duration {
            .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
        }
        return duration(usage.ru_utime) + duration(usage.ru_stime)
    }

    /// Raises the soft limit on open files to at least `wanted` (up to the hard limit); returns the new
    /// soft limit.
    @discardableResult
    static func raiseOpenFileLimit(to wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < rlim_t(wanted) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}

/// Progress lines on standard error, so that standard output stays the table or the JSON.
func benchProgress(_ text: String) {
    Terminal.standardError.line("longlink-bench: \(text)")
}
