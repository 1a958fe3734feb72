import BenchCLISupport
import Foundation
@_spi(Benchmarks) import LongLinkServer
import Synchronization

/// `longlink-bench _links-server`: the server of `longlink-bench links`, in a process of its own
/// (this executable again) so that its resident memory and CPU time are its own and it can be
/// killed with SIGKILL and started again on the same data directory and port.
///
/// It is ``BenchServer`` (one event loop per core) on a ``ServerStores/durable(directory:configuration:)``
/// store synced every second (`DurableSyncPolicy.interval(1 s)`: a killed process loses nothing
/// it committed, only a machine that stops would), with two methods more: `subscribe` (the topic
/// in the payload; the server keeps each topic's principals) and `seed` (stores
/// ``LinkClients/heldPushes`` reliable pushes for the caller's principal and sends them). It
/// prints `listening PORT` once it accepts connections, then runs until it is killed.
enum LinksServer {
    static let scenarioName = "_links-server"
    static let directoryVariable = "LONGLINK_BENCH_LINKS_DATA_DIR"
    static let portVariable = "LONGLINK_BENCH_LINKS_PORT"
    static let capacityVariable = "LONGLINK_BENCH_LINKS_CAPACITY"
    /// For a breakdown of the memory per link, by hand: the de-dup window in milliseconds (the
    /// server's default, 120 s, when unset). Passed down from the parent's environment.
    static let dedupeWindowVariable = "LONGLINK_BENCH_LINKS_DEDUPE_WINDOW_MS"

    /// The server, once started: the `seed` handler pushes through it.
    private final class Box: Sendable {
        let server = Mutex<LongLinkServer?>(nil)
        /// Each topic's subscribed principals: what a server keeps per subscribed link.
        let topics = Mutex<[String: Set<String>]>([:])
    }

    static func main() async -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = environment[directoryVariable], let port = environment[portVariable].flatMap({ Int($0) }),
            let capacity = environment[capacityVariable].flatMap({ Int($0) })
        else {
            Terminal.standardError.line("longlink-bench \(scenarioName): internal; run by 'longlink-bench links'")
            return ExitStatus.usage
        }
        ProcessUsage.raiseOpenFileLimit(to: capacity + 256)
        // The parent holds standard input open: at its end (the parent gone, even by a crash) stop.
        let watchdog = Thread {
            while !FileHandle.standardInput.availableData.isEmpty {}
            exit(ExitStatus.success)
        }
        watchdog.stackSize = 1 << 16
        watchdog.start()
        let box = Box()
        do {
            var storeConfiguration = DurableStoreConfiguration()
            storeConfiguration.sync = .interval(.seconds(1))
            let stores = try ServerStores.durable(directory: directory, configuration: storeConfiguration)
            let server = try await BenchServer.start(
                port: port, loops: BenchMachine.current().cores, stores: stores,
                configure: { configuration in
                    configuration.maxConnections = capacity + 64
                    if let window = environment[dedupeWindowVariable].flatMap({ Int64($0) }) {
                        configuration.dedupeWindow = .milliseconds(window)
                    }
                },
                routes: { router in
                    router.register(
                        "subscribe",
                        synchronous: { payload, context in
                            let topic = String(decoding: payload, as: UTF8.self)
                            if let principal = context.principal {
                                box.topics.withLock { _ = $0[topic, default: []].insert(principal) }
                            }
                            return []
                        })
                    router.register("seed") { _, context in
                        guard let principal = context.principal, let server = box.server.withLock({ $0 }) else {
                            throw BenchError("seed before login")
                        }
                        for number in 0..<LinkClients.heldPushes {
                            _ = try await server.push(
                                to: principal, topic: LinkClients.topic, payload: Array("held \(number)".utf8))
                        }
                        return []
                    }
                })
            box.server.withLock { $0 = server.server }
            FileHandle.standardOutput.write(Data("listening \(server.port)\n".utf8))
            while true { try await Task.sleep(for: .seconds(3_600)) }
        } catch {
            Terminal.standardError.line("longlink-bench \(scenarioName): \(error)")
            return ExitStatus.failure
        }
    }
}

/// A child process of `longlink-bench links` (server or clients) whose standard output the parent
/// reads line by line (on a plain thread of its own) and whose standard input takes commands.
final class LinksChild: Sendable {
    let process: ChildProcess
    private let lines = Mutex<[String]>([])
    private let ended = Atomic<Bool>(false)

    var pid: Int32 { process.processIdentifier }

    init(_ scenario: String, environment: [String: String]) throws {
        var all = ProcessInfo.processInfo.environment
        all.merge(environment) { _, new in new }
        process = try ChildProcess(
            BenchProbe.selfExecutable(), arguments: [scenario], environment: all, standardInput: .pipe,
            standardOutput: .pipe, standardError: .inherit)
        let output = process.standardOutput!
        let thread = Thread { [self] in
            var pending = Data()
            while true {
                let data = output.availableData
                if data.isEmpty { break }
                pending.append(data)
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...end)
                    lines.withLock { $0.append(line) }
                }
            }
            ended.store(true, ordering: .releasing)
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Sends one command line.
    func send(_ command: String) {
        try? process.standardInput?.write(contentsOf: Data((command + "\n").utf8))
    }

    /// Waits for the first line starting with `prefix` (taking it and the lines before it); throws
    /// after `limit` or when the child's output ends first.
    func line(startingWith prefix: String, within limit: Duration) async throws -> String {
        let deadline = ContinuousClock.now.advanced(by: limit)
        while true {
            let found: String? = lines.withLock { lines in
                guard let index = lines.firstIndex(where: { $0.hasPrefix(prefix) }) else { return nil }
                defer { lines.removeSubrange(...index) }
                return lines[index]
            }
            if let found { return found }
            guard !ended.load(ordering: .acquiring) else {
                throw BenchError("a \(prefix) line was expected from process \(pid), which ended")
            }
            guard ContinuousClock.now < deadline else {
                throw BenchError("no \(prefix) line from process \(pid) within \(limit)")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Ends the child with SIGKILL and waits (bounded) for it.
    func kill() async {
        process.kill()
        _ = await process.waitForExit(within: .seconds(10))
    }

    /// Resident memory of process `pid` in bytes (`/proc/PID/statm`), 0 when unreadable.
    static func residentBytes(of pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Double(fields[1]) else { return 0 }
        return pages * Double(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// User plus system CPU time of process `pid` in seconds (`/proc/PID/stat`, clock ticks).
    static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The machine's one-minute load average, for the notes beside each figure.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return String(text.split(separator: " ").first ?? "?")
    }
}
