import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a command with a bounded wait, capturing its output in files (a pipe could fill up and
/// block the child while we wait for it).
package enum Subprocess {
    package struct Result {
        package var status: Int32
        package var output: String
        package var errorOutput: String
        package var timedOut: Bool
    }

    /// Runs `arguments` through `/usr/bin/env` (so `python3` is found on the PATH), killing the
    /// process if it runs longer than `timeout`.
    package static func run(_ arguments: [String], timeout: Duration) async throws -> Result {
        let running = try start(arguments)
        let deadline = ContinuousClock.now + timeout
        while running.process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        return try running.finish()
    }

    /// The same, for synchronous callers (test traits).
    package static func runBlocking(_ arguments: [String], timeout: Duration) throws -> Result {
        let running = try start(arguments)
        let deadline = ContinuousClock.now + timeout
        while running.process.isRunning, ContinuousClock.now < deadline {
            usleep(10_000)
        }
        return try running.finish()
    }

    private struct Running {
        var process: Process
        var outputURL: URL
        var errorURL: URL

        func finish() throws -> Result {
            var timedOut = false
            if process.isRunning {
                timedOut = true
                process.terminate()
                let grace = ContinuousClock.now + .seconds(2)
                while process.isRunning, ContinuousClock.now < grace {
                    usleep(10_000)
                }
                if process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                }
            }
            process.waitUntilExit()
            defer {
                try? FileManager.default.removeItem(at: outputURL)
                try? FileManager.default.removeItem(at: errorURL)
            }
            return Result(
                status: process.terminationStatus,
                output: String(decoding: (try? Data(contentsOf: outputURL)) ?? Data(), as: UTF8.self),
                errorOutput: String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self),
                timedOut: timedOut)
        }
    }

    private static func start(_ arguments: [String]) throws -> Running {
        let directory = FileManager.default.temporaryDirectory
        let outputURL = directory.appendingPathComponent("longlink-\(UUID().uuidString).out")
        let errorURL = directory.appendingPathComponent("longlink-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        return Running(process: process, outputURL: outputURL, errorURL: errorURL)
    }
}
