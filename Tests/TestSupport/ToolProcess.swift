import LongLinkCore
import Foundation
import LongLinkCLISupport
import LongLinkTransport

/// A built executable of this package (`longlink`) run as a child process, with
/// its output collected and every wait bounded: a process still running when a wait runs out is
/// killed and the wait throws.
package final class ToolProcess: Sendable {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String

        package init(description: String) {
            self.description = description
        }
    }

    /// How a finished process ended.
    package struct Outcome: Sendable {
        /// The exit status, or 128 + the signal number when a signal ended it.
        package var status: Int32
        package var standardOutput: String
        package var standardError: String
        /// From just after the launch to the close of its last output stream, measured on the
        /// threads that read the output: the tool's own run time, whatever delays the test task.
        package var runTime: Duration
        package var lines: [String] {
            standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
    }

    private struct Output {
        var standardOutput: [UInt8] = []
        var standardError: [UInt8] = []
        var closedStreams = 0
        /// When the last output stream closed.
        var closedAt: ContinuousClock.Instant?
    }

    private let tool: String
    private let process: ChildProcess
    private let startedAt: ContinuousClock.Instant
    // `Locked`, not `Mutex`: ThreadSanitizer cannot see the futex hand-over of a contended `Mutex`.
    private let output = Locked(Output())

    /// The executable `tool` next to the test bundle (`.build/<triple>/debug`), or the one named
    /// by the environment (`LONGLINK_TOOL` for `longlink`).
    /// An absolute path (an outside program such as `/usr/bin/openssl`) is used as it is.
    package static func toolURL(_ tool: String = "longlink") throws -> URL {
        if tool.hasPrefix("/") { return URL(fileURLWithPath: tool) }
        let fileManager = FileManager.default
        let variable = tool.uppercased().replacingOccurrences(of: "-", with: "_") + "_TOOL"
        if let override = ProcessInfo.processInfo.environment[variable] {
            return URL(fileURLWithPath: override)
        }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let candidates = [
            Bundle.main.bundleURL.appendingPathComponent(tool),
            Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(tool),
            testBinary.deletingLastPathComponent().appendingPathComponent(tool),
            // macOS: .build/debug/LongLinkPackageTests.xctest/Contents/MacOS/LongLinkPackageTests
            testBinary.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(tool),
        ]
        if let found = candidates.first(where: { fileManager.isExecutableFile(atPath: $0.path) }) {
            return found
        }
        throw Failure(
            description: "the \(tool) binary is not next to the test bundle (looked at "
                + candidates.map(\.path).joined(separator: ", ")
                + "); run `swift build` first, or set \(variable) to its path")
    }

    /// Starts `tool arguments…`, with `input` on its standard input (then closed).
    package init(_ arguments: [String], input: [UInt8] = [], tool: String = "longlink") throws {
        self.tool = tool
        process = try ChildProcess(
            try Self.toolURL(tool).path, arguments: arguments, standardInput: .pipe, standardOutput: .pipe,
            standardError: .pipe)
        startedAt = .now
        collect(process.standardOutput!, isError: false)
        collect(process.standardError!, isError: true)
        let writer = process.standardInput!
        let bytes = input
        Thread.detachNewThread {
            if !bytes.isEmpty { try? writer.write(contentsOf: Data(bytes)) }
            try? writer.close()
        }
    }

    private func collect(_ handle: FileHandle, isError: Bool) {
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { break }
                output.withLock { output in
                    if isError {
                        output.standardError.append(contentsOf: data)
                    } else {
                        output.standardOutput.append(contentsOf: data)
                    }
                }
            }
            let closedAt = ContinuousClock.now
            output.withLock { output in
                output.closedStreams += 1
                output.closedAt = max(output.closedAt ?? closedAt, closedAt)
            }
        }
    }

    package var standardOutput: String { output.withLock { String(decoding: $0.standardOutput, as: UTF8.self) } }
    package var standardError: String { output.withLock { String(decoding: $0.standardError, as: UTF8.self) } }

    /// The process id, for signals.
    package var processIdentifier: Int32 { process.processIdentifier }

    /// Sends `signal` to the process.
    package func send(_ signal: Int32) {
        process.send(signal)
    }

    /// Kills the process if it still runs (cleanup after a failed test).
    package func terminate() {
        process.kill()
    }

    /// Waits for the first complete line of standard output.
    package func firstLine(within timeout: Duration = .seconds(10)) async throws -> String {
        try await poll(within: timeout, "the first line on standard output") {
            let text = output.withLock { $0.standardOutput }
            guard let newline = text.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
            return String(decoding: text[..<newline], as: UTF8.self)
        }
    }

    /// Waits until standard output holds at least `count` complete lines; returns them all.
    package func lines(atLeast count: Int, within timeout: Duration = .seconds(10)) async throws -> [String] {
        try await poll(within: timeout, "\(count) lines on standard output") {
            let lines = standardOutput.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            return lines.count >= count ? lines.map(String.init) : nil
        }
    }

    /// Waits until standard output contains `needle` (bytes, so binary output works too).
    package func waitForOutput(containing needle: [UInt8], within timeout: Duration = .seconds(10)) async throws {
        _ = try await poll(within: timeout, "\(String(decoding: needle, as: UTF8.self)) on standard output") {
            () -> Bool? in
            let bytes = output.withLock { $0.standardOutput }
            guard bytes.count >= needle.count else { return nil }
            let found = (0...(bytes.count - needle.count)).contains { start in
                bytes[start..<start + needle.count].elementsEqual(needle)
            }
            return found ? true : nil
        }
    }

    /// Waits for the process to exit and for its output to be read completely.
    package func waitForExit(within timeout: Duration = .seconds(20)) async throws -> Outcome {
        try await poll(within: timeout, "\(tool) to exit") {
            guard let status = process.terminationStatus,
                let closedAt = output.withLock({ $0.closedStreams == 2 ? $0.closedAt : nil })
            else { return nil }
            return Outcome(
                status: status, standardOutput: standardOutput, standardError: standardError,
                runTime: closedAt - startedAt)
        }
    }

    private func poll<Value>(within timeout: Duration, _ what: String, _ check: () -> Value?) async throws -> Value {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let value = check() { return value }
            guard ContinuousClock.now < deadline else {
                terminate()
                throw Failure(
                    description: "timed out after \(timeout) waiting for \(what); killed it. stdout: \(standardOutput) "
                        + "stderr: \(standardError)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Runs `tool arguments…` to completion.
    package static func run(
        _ arguments: [String], input: [UInt8] = [], tool: String = "longlink", within timeout: Duration = .seconds(30)
    ) async throws -> Outcome {
        let process = try ToolProcess(arguments, input: input, tool: tool)
        defer { process.terminate() }
        return try await process.waitForExit(within: timeout)
    }
}
