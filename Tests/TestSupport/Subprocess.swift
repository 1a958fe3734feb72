import Foundation
import LongLinkCLISupport

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
        _ = await running.process.waitForExit(within: timeout)
        let result = running.finish()
        try Task.checkCancellation()
        return result
    }

    /// The same, for synchronous callers (test traits).
    package static func runBlocking(_ arguments: [String], timeout: Duration) throws -> Result {
        let running = try start(arguments)
        _ = running.process.waitUntilExit(within: timeout)
        return running.finish()
    }

    private struct Running {
        var process: ChildProcess
        var outputURL: URL
        var errorURL: URL

        func finish() -> Result {
            var timedOut = false
            if process.isRunning {
                timedOut = true
                process.terminate()
                if process.waitUntilExit(within: .seconds(2)) == nil {
                    process.kill()
                }
            }
            let status = process.waitUntilExit()
            defer {
                try? FileManager.default.removeItem(at: outputURL)
                try? FileManager.default.removeItem(at: errorURL)
            }
            return Result(
                status: status,
                output: String(decoding: (try? Data(contentsOf: outputURL)) ?? Data(), as: UTF8.self),
                errorOutput: String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self),
                timedOut: timedOut)
        }
    }

    private static func start(_ arguments: [String]) throws -> Running {
        let directory = FileManager.default.temporaryDirectory
        let outputURL = directory.appendingPathComponent("longlink-\(UUID().uuidString).out")
        let errorURL = directory.appendingPathComponent("longlink-\(UUID().uuidString).err")
        let process = try ChildProcess(
            "/usr/bin/env", arguments: arguments, standardInput: .nullDevice, standardOutput: .file(outputURL.path),
            standardError: .file(errorURL.path))
        return Running(process: process, outputURL: outputURL, errorURL: errorURL)
    }
}
