import Foundation
import LongLinkCLISupport
import LongLinkServer

/// `serve`'s data directory: where `--data-dir` (or `LONGLINK_DATA_DIR`) keeps reliable pushes and
/// the de-dup window on this machine's disk, and how `--sync` forces them to it.
extension ServeCommand {
    /// The environment variable read for the data directory when `--data-dir` is not given.
    static let dataDirectoryVariable = "LONGLINK_DATA_DIR"

    /// The line said on standard error by a server that keeps its stores in memory: what a
    /// restart takes, and how to keep it.
    static let inMemoryWarning =
        "longlink serve: warning: reliable pushes and stored replies are kept in memory and do not survive a"
        + " restart; give --data-dir PATH (or \(dataDirectoryVariable)) to keep them on disk"

    /// A durable store's directory and sync policy, with where the directory was named.
    struct DataDirectory: Equatable, CustomStringConvertible {
        var path: String
        /// `--data-dir` or `LONGLINK_DATA_DIR`, for messages.
        var source: String
        var sync: DurableSyncPolicy = .everyCommit

        var description: String { "\(path) (sync \(sync))" }
    }

    /// The data directory of `--data-dir`, else `LONGLINK_DATA_DIR`, with `--sync`; nil without
    /// either (then `--sync` is a usage error: it says how a file is written, and there is none).
    static func dataDirectory(
        _ arguments: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> DataDirectory? {
        let found: DataDirectory?
        if let path = arguments.value("data-dir") {
            guard !path.isEmpty else { throw UsageError("--data-dir needs a directory, not ''") }
            found = DataDirectory(path: path, source: "--data-dir")
        } else if let path = environment[dataDirectoryVariable], !path.isEmpty {
            found = DataDirectory(path: path, source: dataDirectoryVariable)
        } else {
            found = nil
        }
        guard var directory = found else {
            if arguments.value("sync") != nil {
                throw UsageError(
                    "--sync needs --data-dir (or \(dataDirectoryVariable)): it says how its file is synced")
            }
            return nil
        }
        if let text = arguments.value("sync") { directory.sync = try syncPolicy(text) }
        return directory
    }

    /// `--sync`: `every-commit`, `interval:DURATION` or `never`.
    static func syncPolicy(_ text: String) throws(UsageError) -> DurableSyncPolicy {
        switch text {
        case "every-commit": return .everyCommit
        case "never": return .never
        default:
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == "interval", let interval = DurationText.parse(String(parts[1])),
                interval > .zero
            {
                return .interval(interval)
            }
            throw UsageError(
                "--sync needs every-commit, interval:DURATION (such as interval:1s) or never, not '\(text)'")
        }
    }

    /// The server's stores in the durable store on `directory`, its budgets those of
    /// `configuration`; what the store says on opening goes to `log`. Throws the store's error,
    /// which names the directory or file (another server holds it, the file is not a store).
    static func durableStores(
        on directory: DataDirectory, configuration: ServerConfiguration, log: EventLog
    ) throws(LongLinkError) -> ServerStores {
        var storeConfiguration = DurableStoreConfiguration(budgetsOf: configuration)
        storeConfiguration.sync = directory.sync
        storeConfiguration.logger = { log("durable store: \($0)") }
        return try .durable(directory: directory.path, configuration: storeConfiguration)
    }
}
