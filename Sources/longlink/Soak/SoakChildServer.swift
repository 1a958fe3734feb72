import LongLinkCore
import Foundation
import LongLinkCLISupport
import LongLinkServer
import LongLinkTesting
import LongLinkTransport

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The server of `soak --data-dir`: this executable's `serve --data-dir` in a child process of
/// its own, so that a fault can `kill -9` it as a crash would, and start it again on the same
/// directory and port. Each run of `count` goes to a runs log in the directory, outside the
/// process that dies, so runs are counted across restarts.
final class SoakChildServer: Sendable {
    /// The data directory.
    let directory: String
    /// The port the server listens on, the same for every instance.
    let port: Int
    private let executable: String
    private let process: Locked<ChildProcess?>
    private let instances = Locked(1)

    private init(directory: String, executable: String, port: Int, process: ChildProcess) {
        self.directory = directory
        self.executable = executable
        self.port = port
        self.process = Locked(process)
    }

    /// The file `count` appends its runs to.
    var runsLogPath: String { directory + "/soak-runs.log" }

    /// How many server processes were started.
    var instancesStarted: Int { instances.withLock { $0 } }

    /// Starts the first server on `directory` (made when missing) on a port of the system's choice.
    static func start(directory: String) async throws -> SoakChildServer {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Runs of an earlier soak on the same directory are not this run's.
        try? FileManager.default.removeItem(atPath: directory + "/soak-runs.log")
        let (process, port) = try await launch(executable: executable, directory: directory, port: 0)
        return SoakChildServer(directory: directory, executable: executable, port: port, process: process)
    }

    /// Launches `serve` and waits (at most 10 s) for its `listening on` line; its port.
    private static func launch(executable: String, directory: String, port: Int) async throws -> (ChildProcess, Int) {
        let output = directory + "/soak-serve.out"
        let errors = directory + "/soak-serve.err"
        let process = try ChildProcess(
            executable,
            arguments: [
                "serve", "--port", "\(port)", "--quiet", "--no-feed", "--data-dir", directory,
                "--runs-log", directory + "/soak-runs.log", "--dedupe-window", "120s",
            ],
            standardInput: .nullDevice, standardOutput: .file(output), standardError: .file(errors))
        let deadline = ContinuousClock.now + .seconds(10)
        let prefix = "listening on 127.0.0.1:"
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let line = text.split(separator: "\n").first, line.hasPrefix(prefix),
                let bound = Int(line.dropFirst(prefix.count))
            {
                return (process, bound)
            }
            if let status = process.terminationStatus {
                let said = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
                throw LongLinkError(
                    code: .unavailable,
                    message: "serve --data-dir \(directory) exited with status \(status): "
                        + said.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            try await Task.sleep(for: .milliseconds(10))  // a poll of the child's output file
        }
        process.kill()
        _ = await process.waitForExit(within: .seconds(5))
        throw LongLinkError(code: .unavailable, message: "serve --data-dir \(directory) did not listen within 10 s")
    }

    /// `kill -9` of the server; returns once it is gone.
    func kill() async {
        guard let process = process.withLock({ $0 }) else { return }
        process.kill()
        _ = await process.waitForExit(within: .seconds(10))
        self.process.withLock { $0 = nil }
    }

    /// SIGTERM (a graceful shutdown: GoAway, in-flight replies sent) and waits for the exit.
    func stop() async {
        guard let process = process.withLock({ $0 }) else { return }
        process.terminate()
        if await process.waitForExit(within: .seconds(10)) == nil {
            process.kill()
            _ = await process.waitForExit(within: .seconds(5))
        }
        self.process.withLock { $0 = nil }
    }

    /// Starts a server again on the directory and port, retrying for up to 10 s while the port is
    /// still taken (a connection's source port in the kernel's ephemeral range).
    func start() async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            do {
                let (process, _) = try await Self.launch(executable: executable, directory: directory, port: port)
                self.process.withLock { $0 = process }
                instances.withLock { $0 += 1 }
                return
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(100))  // a back-off between attempts
            }
        }
    }

    /// Runs of `count` per (client id, request id), from the runs log.
    func executions() -> [String: Int] {
        let text = (try? String(contentsOfFile: runsLogPath, encoding: .utf8)) ?? ""
        var runs: [String: Int] = [:]
        for line in text.split(separator: "\n") { runs[String(line), default: 0] += 1 }
        return runs
    }
}
