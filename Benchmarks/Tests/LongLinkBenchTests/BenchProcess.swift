import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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

    static func run(_ arguments: [String], within timeout: Duration) async throws -> Outcome {
        let bundle = Bundle.main.bundleURL
        let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent("longlink-bench") }
        guard let binary = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "no longlink-bench at \(candidates.map(\.path)); build the package first")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputs = ["out", "err"].map { directory.appendingPathComponent($0) }
        for output in outputs { _ = FileManager.default.createFile(atPath: output.path, contents: nil) }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outputs[0])
        process.standardError = try FileHandle(forWritingTo: outputs[1])
        try process.run()
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                kill(process.processIdentifier, SIGKILL)
                throw Failure(description: "longlink-bench \(arguments) still ran after \(timeout); killed it")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        let texts = try outputs.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        return Outcome(status: process.terminationStatus, standardOutput: texts[0], standardError: texts[1])
    }
}
