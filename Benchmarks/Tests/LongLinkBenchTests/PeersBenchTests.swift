import Foundation
import Testing

@testable import longlink_bench

/// `longlink-bench peers`: core NATS beside LongLink when NATS and Go are installed, a clean skip
/// when they are not (CI installs neither).
@Suite("longlink-bench peers")
struct PeersBenchTests {
    static let natsPresent: Bool = {
        guard NATSPeer.locate("nats-server") != nil, NATSPeer.locate("go") != nil else {
            print("LongLinkBenchTests: nats-server or go not on the PATH; the NATS run is skipped")
            return false
        }
        return true
    }()

    static let keys = [
        "peers.nats.pubsub", "peers.nats.request_reply.in_flight_1", "peers.nats.request_reply.in_flight_64",
        "peers.nats.request_reply.in_flight_1024", "peers.nats.request_reply.p50", "peers.nats.pubsub.unconflated",
    ]

    static func results(_ outcome: BenchProcess.Outcome) throws -> (results: [String: Any], notes: [String]) {
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any])
        return (try #require(object["results"] as? [String: Any]), try #require(object["notes"] as? [String]))
    }

    /// `peers` with `path` as its PATH, expected to skip: exit status 0, no rows, one note naming
    /// what to install. Returns the note and the standard error.
    static func skipped(path: String) async throws -> (note: String, standardError: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = path
        let outcome = try await BenchProcess.run(
            ["peers", "--duration", "0.1", "--runs", "1", "--json"], environment: environment, within: .seconds(60))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let (results, notes) = try results(outcome)
        #expect(results.isEmpty)
        #expect(notes.count == 1, "\(notes)")
        let note = try #require(notes.first)
        #expect(note.contains(NATSPeer.install))
        return (note, outcome.standardError)
    }

    /// Without nats-server on the PATH: what to install, no rows, exit status 0.
    @Test func missingNATSSkipsWithWhatToInstall() async throws {
        let (note, standardError) = try await Self.skipped(path: "/nonexistent-\(UUID().uuidString)")
        #expect(note.hasPrefix("peers: NATS rows skipped: nats-server and go not on the PATH"))
        #expect(standardError.contains(NATSPeer.install))
    }

    /// A `go` whose build fails (as without Debian's NATS client): the compiler's first line, no
    /// rows, exit status 0; nats-server is never started.
    @Test func goClientThatDoesNotCompileSkipsWithTheCompilersMessage() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("peers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scripts = [
            "go": "#!/bin/sh\necho 'main.go:27:2: cannot find package \"github.com/nats-io/nats.go\"' >&2\nexit 1\n",
            "nats-server": "#!/bin/sh\nexit 1\n",
        ]
        for (name, text) in scripts {
            let path = directory.appendingPathComponent(name).path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path)
        }
        let (note, _) = try await Self.skipped(path: directory.path)
        #expect(
            note.hasPrefix("peers: NATS rows skipped: the NATS Go client did not compile (main.go:27:2: cannot find"))
    }

    /// A peer that hangs is killed at its bound: the run goes on with a failure, never waits for it.
    @Test func aHungChildIsKilledAtItsBound() async throws {
        let started = ContinuousClock.now
        let run = try await runChild(
            "sleep", "/bin/sleep", arguments: ["60"], capture: .standardOutput, killedAfter: .milliseconds(100))
        #expect(run.status != 0)
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    /// With NATS and Go: every row, each with LongLink's figure, NATS's and their ratio.
    @Test(.enabled(if: natsPresent)) func everyRowHasBothFiguresAndTheRatio() async throws {
        let outcome = try await BenchProcess.run(
            ["peers", "--duration", "0.2", "--runs", "1", "--json"], within: .seconds(300))
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let (results, notes) = try Self.results(outcome)
        #expect(Set(results.keys) == Set(Self.keys), "notes: \(notes)")
        for key in Self.keys {
            let row = try #require(results[key] as? [String: Any], "\(key)")
            for field in ["value", "baseline", "ratio"] {
                #expect((row[field] as? Double ?? 0) > 0, "\(key).\(field): \(row)")
            }
        }
    }
}
