import Foundation

/// `longlink serve --data-dir`, killed and restarted on its directory: what the durable store's
/// fault tests do to it.
extension ServeProcess {
    /// Starts `longlink serve --data-dir directory` on `port` (0: the system chooses) with `extra`
    /// arguments (logging, the store's lines included, unless `quiet`), and waits for its
    /// `listening on` line.
    package static func start(
        dataDirectory directory: String, port: Int = 0, quiet: Bool = true, _ extra: [String] = []
    ) async throws -> ServeProcess {
        try await start(["--data-dir", directory] + extra, port: port, quiet: quiet)
    }

    /// `kill -9`: no shutdown, nothing flushed; returns once the process has exited.
    package func kill(within timeout: Duration = .seconds(10)) async throws {
        tool.send(SIGKILL)
        let outcome = try await tool.waitForExit(within: timeout)
        guard outcome.status == 128 + SIGKILL else {
            throw ToolProcess.Failure(description: "serve ended with \(outcome.status), not by SIGKILL")
        }
    }

    /// A new process on the same data directory and port (the old one must have exited).
    package func restart(dataDirectory directory: String, _ extra: [String] = []) async throws -> ServeProcess {
        try await Self.start(dataDirectory: directory, port: port, extra)
    }
}
