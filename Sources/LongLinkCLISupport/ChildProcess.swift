import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process started with `posix_spawn`, for the tool, the tests and the benchmarks.
///
/// Foundation's `Process` is not used: on Linux its launch scans `/proc/self/fd` in the parent,
/// which crashed the test runner now and then. The child inherits no descriptor but 0, 1 and 2
/// (a test holds thousands of sockets, and a child holding one would keep a connection open after
/// the test closed it), and starts with every signal at its default action and none blocked,
/// whatever the parent ignores or masks.
///
/// The child is reaped exactly once, by whichever of ``isRunning``, ``terminationStatus`` or a wait
/// first sees it exit; signals are sent only before that, so they never reach a reused pid.
package final class ChildProcess: Sendable {
    /// What the child's standard input is.
    package enum Input: Sendable {
        /// The parent's own.
        case inherit
        /// `/dev/null`: the child reads end of file at once.
        case nullDevice
        /// A pipe; the parent writes to ``ChildProcess/standardInput`` and closes it to end the input.
        case pipe
    }

    /// Where the child's standard output or standard error goes.
    package enum Output: Sendable {
        /// The parent's own.
        case inherit
        /// `/dev/null`.
        case nullDevice
        /// A file, created or truncated. A file, unlike a pipe, never fills up and blocks a child
        /// that nobody reads.
        case file(String)
        /// A pipe; the parent reads from ``ChildProcess/standardOutput`` or ``ChildProcess/standardError``.
        case pipe
    }

    /// The child could not be started: what failed, with the system's error number and text.
    package struct Failure: Error, CustomStringConvertible, Sendable {
        /// The executable as the caller named it.
        package var executable: String
        /// The call that failed (`posix_spawn`, `pipe`, …) or a lookup (`PATH`).
        package var operation: String
        /// The `errno` value.
        package var code: Int32

        /// A failure of `operation` with `errno` `code`.
        package init(executable: String, operation: String, code: Int32) {
            self.executable = executable
            self.operation = operation
            self.code = code
        }

        /// `cannot start EXECUTABLE: OPERATION failed: TEXT (errno N)`.
        package var description: String {
            "cannot start \(executable): \(operation) failed: \(String(cString: strerror(code))) (errno \(code))"
        }
    }

    /// The child's process id.
    package let processIdentifier: pid_t
    /// The parent's end of the standard input pipe, with ``Input/pipe``.
    package let standardInput: FileHandle?
    /// The parent's end of the standard output pipe, with ``Output/pipe``.
    package let standardOutput: FileHandle?
    /// The parent's end of the standard error pipe, with ``Output/pipe``.
    package let standardError: FileHandle?
    /// The termination status once reaped.
    private let status = Mutex<Int32?>(nil)

    /// Starts `executable` with `arguments`. A name without a slash is searched on the PATH (of
    /// `environment` when given, else the parent's), as `/usr/bin/env` does. `environment` replaces
    /// the parent's when given. Throws ``Failure`` when the executable is not found or cannot be
    /// started, or a file cannot be opened.
    package init(
        _ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
        workingDirectory: String? = nil, standardInput: Input = .inherit, standardOutput: Output = .inherit,
        standardError: Output = .inherit
    ) throws(Failure) {
        let launched = try Spawn.launch(
            executable, arguments: arguments, environment: environment, workingDirectory: workingDirectory,
            input: standardInput, output: standardOutput, error: standardError)
        processIdentifier = launched.pid
        self.standardInput = launched.parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.standardOutput = launched.parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        self.standardError = launched.parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// Whether the child still runs; reaps it (once) when it has exited.
    package var isRunning: Bool { reap() == nil }

    /// The exit status, or 128 + the signal number when a signal ended the child; nil while it runs.
    /// -1 when something else reaped it (a parent that set `SIGCHLD` to `SIG_IGN`).
    package var terminationStatus: Int32? { reap() }

    /// Sends SIGTERM, unless the child has been reaped.
    package func terminate() { send(SIGTERM) }

    /// Sends SIGKILL, unless the child has been reaped.
    package func kill() { send(SIGKILL) }

    /// Sends `signal`, unless the child has been reaped (its pid may then belong to another process).
    package func send(_ signal: Int32) {
        // Under the lock: the reap takes it too, so the pid is still this child's while we signal.
        status.withLock { status in
            guard status == nil else { return }
            #if canImport(Glibc)
                _ = Glibc.kill(processIdentifier, signal)
            #elseif canImport(Darwin)
                _ = Darwin.kill(processIdentifier, signal)
            #endif
        }
    }

    /// Blocks the calling thread until the child exits; returns ``terminationStatus``.
    @discardableResult
    package func waitUntilExit() -> Int32 {
        if let status = reap() { return status }
        // Waits without reaping, so that the reap (and its status) stays under the lock.
        var info = siginfo_t()
        while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
        while true {
            if let status = reap() { return status }
            usleep(1_000)  // a poll, should waitid have failed while the child runs
        }
    }

    /// Blocks the calling thread until the child exits or `timeout` passes, polling every
    /// `interval`; the status, or nil when it still runs.
    package func waitUntilExit(within timeout: Duration, pollingEvery interval: Duration = .milliseconds(10))
        -> Int32?
    {
        let deadline = ContinuousClock.now + timeout
        let micros = interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000
        while true {
            if let status = reap() { return status }
            guard ContinuousClock.now < deadline else { return nil }
            usleep(UInt32(clamping: micros))
        }
    }

    /// Waits without blocking a thread until the child exits or `timeout` passes, polling every
    /// `interval` (a child process has nothing to await on); the status, or nil when it still runs
    /// or the task is cancelled.
    package func waitForExit(within timeout: Duration, pollingEvery interval: Duration = .milliseconds(10)) async
        -> Int32?
    {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = reap() { return status }
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: interval)) != nil else { return nil }
        }
    }

    /// The status once the child has exited, reaping it the first time; nil while it runs.
    private func reap() -> Int32? {
        status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            while true {
                let result = waitpid(processIdentifier, &raw, WNOHANG)
                if result == processIdentifier {
                    status = Self.decode(raw)
                    return status
                }
                if result == 0 { return nil }
                if errno == EINTR { continue }
                status = -1
                return status
            }
        }
    }

    /// The exit code, or 128 + the signal (the `WIFEXITED` and `WTERMSIG` macros, which Swift does not import).
    private static func decode(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7f
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
    }
}
