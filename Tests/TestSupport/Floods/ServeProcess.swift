import Foundation

/// `longlink serve`, built by this package, as a child process on a port the system chose, read
/// from its first line and stopped by its process id: what flood tests measure from outside (its
/// CPU time and resident memory from `/proc`).
package final class ServeProcess: Sendable {
    package let tool: ToolProcess
    package let port: Int

    package var processIdentifier: Int32 { tool.processIdentifier }

    private init(tool: ToolProcess, port: Int) {
        self.tool = tool
        self.port = port
    }

    /// Starts `longlink serve --port 0 --quiet --no-feed` with `extra` arguments (on `port` instead
    /// of 0 when given; without `--quiet` when `quiet` is false, its log lines on standard output
    /// then) and waits for its `listening on` line.
    package static func start(_ extra: [String] = [], port: Int = 0, quiet: Bool = true) async throws -> ServeProcess {
        let tool = try ToolProcess(
            ["serve", "--port", String(port)] + (quiet ? ["--quiet"] : []) + ["--no-feed"] + extra)
        let prefix = "listening on 127.0.0.1:"
        // Without --quiet, lines said while starting (a store's) may come first; with it, none.
        func listening() -> Substring? {
            tool.standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
                .first { $0.hasPrefix(prefix) || (quiet && !$0.isEmpty) }
        }
        do {
            try await eventually("serve's listening line", within: .seconds(20)) { listening() != nil }
        } catch {
            tool.terminate()
            throw ToolProcess.Failure(description: "\(error); stderr: \(tool.standardError)")
        }
        let line = listening() ?? ""
        guard line.hasPrefix(prefix), let port = Int(line.dropFirst(prefix.count)), port > 0 else {
            tool.terminate()
            throw ToolProcess.Failure(description: "unexpected first line: \(line)")
        }
        return ServeProcess(tool: tool, port: port)
    }

    /// Its CPU time and resident memory now.
    package func usage() throws -> ProcessUsage {
        try ProcessUsage.of(processIdentifier)
    }

    /// SIGTERM, then SIGKILL if it has not exited within `timeout`.
    package func stop(within timeout: Duration = .seconds(10)) async {
        tool.send(SIGTERM)
        _ = try? await tool.waitForExit(within: timeout)
        tool.terminate()
    }
}

/// A process's CPU time (user and system) and resident memory, from `/proc/<pid>/stat` and
/// `/proc/<pid>/status` (Linux).
package struct ProcessUsage: Sendable {
    package var cpu: Duration
    package var residentBytes: Int

    package struct Unreadable: Error, CustomStringConvertible {
        package let description: String
    }

    package static func of(_ pid: Int32) throws -> ProcessUsage {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // The command name, in parentheses, may hold spaces: fields count from after its ')'.
        // There, field 0 is the state (field 3 of proc(5)); utime and stime are 14 and 15.
        guard let close = stat.lastIndex(of: ")") else { throw Unreadable(description: "/proc/\(pid)/stat: \(stat)") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else {
            throw Unreadable(description: "/proc/\(pid)/stat: \(stat)")
        }
        let ticks = Int(sysconf(Int32(_SC_CLK_TCK)))
        let cpu = Duration.milliseconds((user + system) * 1_000 / max(1, ticks))
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kibibytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({
                Int($0)
            })
        else { throw Unreadable(description: "/proc/\(pid)/status has no VmRSS") }
        return ProcessUsage(cpu: cpu, residentBytes: kibibytes << 10)
    }
}
