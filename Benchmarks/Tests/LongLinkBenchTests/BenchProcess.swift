import BenchCLISupport
import Foundation

/// The built `longlink-bench` (next to the test bundle) run as a child process, its output in
/// temporary files (a full pipe would block it), killed when it outlives its bound.
enum BenchProcess {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// How a finished run ended.
    struct Outcome: Sendable {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// `environment` replaces the test's own when given.
    static func run(_ arguments: [String], environment: [String: String]? = nil, within timeout: Duration)
        async throws -> Outcome
    {
        let bundle = Bundle.main.bundleURL
        let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent("longlink-bench") }
        guard let binary = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "no longlink-bench at \(candidates.map(\.path)); build the package first")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputs = ["out", "err"].map { directory.appendingPathComponent($0) }
        let process = try ChildProcess(
            binary.path, arguments: arguments, environment: environment, standardInput: .nullDevice,
            standardOutput: .file(outputs[0].path), standardError: .file(outputs[1].path))
        guard let status = await process.waitForExit(within: timeout) else {
            process.kill()
            try Task.checkCancellation()
            throw Failure(description: "longlink-bench \(arguments) still ran after \(timeout); killed it")
        }
        let texts = try outputs.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        return Outcome(status: status, standardOutput: texts[0], standardError: texts[1])
    }
}
