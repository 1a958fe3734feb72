import BenchCLISupport
import Foundation
import LongLink

/// Measurements that need a process of their own (memory, CPU time): the parent runs the server
/// and starts this executable again as `longlink-bench _probe`, with the probe's parameters in
/// the environment; the child measures, prints one line `probe key=value …` and exits at once
/// (without tearing down what it measured).
enum BenchProbe {
    static let scenarioName = "_probe"

    private static let kindVariable = "LONGLINK_BENCH_PROBE"
    private static let portVariable = "LONGLINK_BENCH_PORT"
    private static let countVariable = "LONGLINK_BENCH_COUNT"
    static let deadlineVariable = "LONGLINK_BENCH_DEADLINE_MS"
    /// The deadline strategy of the probe's client: `taskGroup`, or the deadline heap otherwise.
    static let strategyVariable = "LONGLINK_BENCH_STRATEGY"

    /// The strategy the parent asked for (the heap unless it said `taskGroup`): the probes measure
    /// many requests pending at once, which is what the heap is the option for.
    static var strategy: DeadlineStrategy {
        ProcessInfo.processInfo.environment[strategyVariable] == "taskGroup" ? .taskGroup : .deadlineHeap
    }

    /// Runs a probe in a child process and returns its figures.
    static func spawn(_ kind: String, port: Int, count: Int = 0, extra: [String: String] = [:]) async throws
        -> [String: Double]
    {
        var environment = ProcessInfo.processInfo.environment
        environment[kindVariable] = kind
        environment[portVariable] = String(port)
        environment[countVariable] = String(count)
        environment.merge(extra) { _, new in new }
        let finalEnvironment = environment
        let (status, output) = try await onPlainThread("bench-probe") { () throws -> (Int32, String) in
            let process = try ChildProcess(
                selfExecutable(), arguments: [scenarioName], environment: finalEnvironment, standardOutput: .pipe)
            let data = process.standardOutput!.readDataToEndOfFile()
            return (process.waitUntilExit(), String(decoding: data, as: UTF8.self))
        }
        guard status == 0, let line = output.split(separator: "\n").first(where: { $0.hasPrefix("probe ") }) else {
            throw BenchError("the \(kind) probe failed (status \(status)): \(output)")
        }
        var values: [String: Double] = [:]
        for field in line.split(separator: " ").dropFirst() {
            let parts = field.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }

    /// The path of this executable.
    static func selfExecutable() -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The child's side: runs the probe named in the environment.
    static func main() async -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        guard let kind = environment[kindVariable], let port = environment[portVariable].flatMap({ Int($0) }) else {
            Terminal.standardError.line(
                "longlink-bench _probe: internal; run by 'longlink-bench memory' and 'timeouts'")
            return ExitStatus.usage
        }
        let count = environment[countVariable].flatMap { Int($0) } ?? 0
        do {
            let values: [(String, Double)]
            switch kind {
            case "idle": values = try await MemoryBenchmark.probeIdleClient(port: port)
            case "tasks": values = try await MemoryBenchmark.probeSuspendedTasks(count: count)
            case "pending": values = try await MemoryBenchmark.probePendingRequests(port: port, count: count)
            case "retained": values = try await MemoryBenchmark.probeRetained(port: port, count: count)
            case "retained-tasks": values = try await MemoryBenchmark.probeRetainedBareTasks(count: count)
            case "timeouts":
                let milliseconds = environment[deadlineVariable].flatMap { Int64($0) } ?? 3_000
                values = try await TimeoutBenchmark.probe(
                    port: port, count: count, deadlineAfter: .milliseconds(milliseconds))
            default: throw BenchError("unknown probe \(kind)")
            }
            report(values)
        } catch {
            Terminal.standardError.line("longlink-bench _probe \(kind): \(error)")
            exit(ExitStatus.failure)
        }
    }

    /// Prints the figures and ends the process at once.
    static func report(_ values: [(String, Double)]) -> Never {
        let fields = values.map { "\($0.0)=\(String(format: "%.6f", $0.1))" }
        Terminal.standardOutput.line("probe " + fields.joined(separator: " "))
        exit(ExitStatus.success)
    }
}
