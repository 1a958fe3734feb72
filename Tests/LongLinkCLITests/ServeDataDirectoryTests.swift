import Foundation
import LongLinkCLISupport
import LongLinkServer
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

/// A fresh directory under the system's temporary one, removed by the caller.
func temporaryDataDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "longlink-\(name)-\(UInt32.random(in: 0...UInt32.max))"
    return path
}

@Suite("longlink serve --data-dir", .sharedMachine)
struct ServeDataDirectoryTests {
    /// A reliable push stored (its producer's request answered) before `kill -9` is delivered, once,
    /// by a server started again on the same directory; the answered request is replayed, not run.
    @Test(.timeLimit(.minutes(3)))
    func aStoredPushSurvivesKillNine() async throws {
        let directory = temporaryDataDirectory("kill9")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--quiet", "--no-feed", "--data-dir", directory]
        let (first, firstPort) = try await ServeCommandTests.startServer(arguments)
        defer { first.terminate() }
        let before = try await FrameClient.connect(host: "127.0.0.1", port: firstPort)
        defer { before.close() }
        _ = try await before.handshake(clientID: "durable-client")
        #expect(try await before.call("login", "alice", id: "login-1").status == nil)
        // No Sync: the pushes are stored, not sent, when the process dies.
        let emit = #"{"topic":"t","n":3,"reliable":true}"#
        let emitted = try await before.call("emit", emit, id: "e1")
        #expect(emitted.status == nil, "\(emitted)")
        // A later de-duplicated request: its claim is committed after the reply above is queued.
        #expect(try await before.call("echo", "x", id: "after-e1").status == nil)
        first.send(SIGKILL)
        #expect(try await first.waitForExit().status == 128 + SIGKILL)

        let (second, secondPort) = try await ServeCommandTests.startServer(arguments)
        defer { second.terminate() }
        let after = try await FrameClient.connect(host: "127.0.0.1", port: secondPort)
        defer { after.close() }
        _ = try await after.handshake(clientID: "durable-client")
        #expect(try await after.call("login", "alice", id: "login-2").status == nil)
        try await after.send(.sync(Frame.Sync()))
        var indexes: [Int] = []
        var seqs: [UInt64] = []
        for _ in 0..<3 {
            let push = try await after.push(topic: "t", within: .seconds(10))
            seqs.append(push.seq)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Int])
            indexes.append(body["index"] ?? 0)
        }
        #expect(indexes == [1, 2, 3])
        #expect(seqs == [1, 2, 3])
        try await after.send(.ack(Frame.Ack(seqs: seqs)))
        // The answered request, resent, does not run again: its stored reply, or UNKNOWN when the
        // process died between sending the reply and committing it (the store's documented race).
        let resent = try await after.call("emit", emit, id: "e1")
        if resent.status == nil {
            #expect(resent.payload == emitted.payload)
        } else {
            #expect(resent.status?.code == .unknown, "\(resent)")
        }
        // Had it run again, its three pushes would have taken seqs 4 to 6.
        let next = try await after.call("emit", #"{"topic":"t","n":1,"reliable":true}"#, id: "e2")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(next.payload)) as? [String: Any])
        #expect(fields["first_seq"] as? Int == 4, "\(fields)")
        second.send(SIGTERM)
        let outcome = try await second.waitForExit()
        #expect(outcome.status == 0)
        #expect(!outcome.standardError.contains("warning"), "\(outcome.standardError)")
    }

    @Test func aSecondServerOnTheDirectoryRefusesToStart() async throws {
        let directory = temporaryDataDirectory("locked")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (first, _) = try await ServeCommandTests.startServer(["--quiet", "--no-feed", "--data-dir", directory])
        defer { first.terminate() }
        let second = try await ToolProcess.run(["serve", "--port", "0", "--quiet", "--data-dir", directory])
        #expect(second.status == ExitStatus.failure)
        #expect(second.standardOutput.isEmpty, "\(second.standardOutput)")
        let lines = second.standardError.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(second.standardError)")
        #expect(second.standardError.contains("\(directory) is in use by another durable store"))
        first.send(SIGTERM)
        #expect(try await first.waitForExit().status == 0)
    }

    @Test func aFileThatIsNoStoreIsNamedAndRefused() async throws {
        let directory = temporaryDataDirectory("garbage")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let file = directory + "/longlink.sqlite"
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: file))
        let outcome = try await ToolProcess.run(["serve", "--port", "0", "--quiet", "--data-dir", directory])
        #expect(outcome.status == ExitStatus.failure)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.split(separator: "\n").count == 1, "\(outcome.standardError)")
        #expect(outcome.standardError.contains(file), "\(outcome.standardError)")
        // Left as it was: never reset.
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(repeating: 0x5A, count: 8192))
    }

    /// Without a data directory or Redis, one line on standard error says what a restart loses.
    @Test func inMemoryServeWarnsOnce() async throws {
        let (server, _) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        server.send(SIGTERM)
        let outcome = try await server.waitForExit()
        #expect(outcome.status == 0)
        let warnings = outcome.standardError.split(separator: "\n").filter { $0.contains("--data-dir") }
        #expect(warnings == [Substring(ServeCommand.inMemoryWarning)], "\(outcome.standardError)")
        #expect(ServeCommand.inMemoryWarning.contains("do not survive a restart"))
    }

    @Test func theOptionsParse() throws {
        func parse(_ arguments: [String], environment: [String: String] = [:]) throws -> ServeCommand.DataDirectory? {
            try ServeCommand.dataDirectory(
                ArgumentParser.parse(["--port", "0"] + arguments, for: ServeCommand.spec), environment: environment)
        }
        #expect(try parse([]) == nil)
        #expect(try parse(["--data-dir", "/d"]) == .init(path: "/d", source: "--data-dir"))
        let variable = ["LONGLINK_DATA_DIR": "/from-env"]
        #expect(try parse([], environment: variable) == .init(path: "/from-env", source: "LONGLINK_DATA_DIR"))
        // The option wins over the variable.
        #expect(try parse(["--data-dir", "/d"], environment: variable)?.path == "/d")
        #expect(try parse(["--data-dir", "/d", "--sync", "never"])?.sync == .never)
        #expect(try parse(["--data-dir", "/d", "--sync", "every-commit"])?.sync == .everyCommit)
        #expect(try parse(["--data-dir", "/d", "--sync", "interval:250ms"])?.sync == .interval(.milliseconds(250)))
        #expect(try parse(["--sync", "interval:1s"], environment: variable)?.sync == .interval(.seconds(1)))
        for bad in ["always", "interval", "interval:", "interval:soon", "interval:0"] {
            #expect(throws: UsageError.self, "\(bad)") { try parse(["--data-dir", "/d", "--sync", bad]) }
        }
        #expect(throws: UsageError.self) { try parse(["--sync", "never"]) }
        #expect(throws: UsageError.self) { try parse(["--data-dir", ""]) }
    }

    @Test func aDataDirectoryWithRedisIsAUsageError() async throws {
        let outcome = try await ToolProcess.run(
            ["serve", "--port", "0", "--data-dir", "/tmp/unused", "--redis", "redis://127.0.0.1:6379"])
        #expect(outcome.status == ExitStatus.usage)
        #expect(outcome.standardError.contains("--data-dir"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("use one"))
        let syncAlone = try await ToolProcess.run(["serve", "--port", "0", "--sync", "never"])
        #expect(syncAlone.status == ExitStatus.usage)
        #expect(syncAlone.standardError.contains("--sync needs --data-dir"))
    }
}

@Suite("longlink soak --data-dir", .sharedMachine)
struct SoakDataDirectoryTests {
    /// The soak's server is a `serve --data-dir` child process that the schedule kills with
    /// SIGKILL (at 6 s) and starts again on the same directory: nothing lost, duplicated or run twice.
    @Test(.timeLimit(.minutes(5)))
    func theSoakKillsItsDurableServerAndLosesNothing() async throws {
        let directory = temporaryDataDirectory("soak")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outcome = try await ToolProcess.run(
            ["soak", "--data-dir", directory, "--duration", "20s"], within: .seconds(120))
        let output = outcome.standardOutput
        #expect(outcome.status == 0, "\(output) \(outcome.standardError)")
        for label in ["lost", "duplicated", "executed twice", "hung", "out of order", "left pending"] {
            #expect(summaryValue(label, in: output) == "0", "\(label) in \(output)")
        }
        #expect(summaryValue("result", in: output) == "PASS")
        #expect(output.contains("fault  kill -9 the server, restart it on its data directory"), "\(output)")
        #expect(output.contains("undo: server 0 restarted"), "\(output)")
        #expect(Int(summaryValue("pushes emitted", in: output) ?? "") ?? 0 > 50)
        // Every run of count was logged outside the process that was killed.
        let runs = try String(contentsOfFile: directory + "/soak-runs.log", encoding: .utf8)
        #expect(runs.split(separator: "\n").count > 50)
    }

    @Test func theSoakOptionsAreChecked() async throws {
        let withFleet = try await ToolProcess.run(["soak", "--fleet", "2", "--data-dir", "/tmp/unused"])
        #expect(withFleet.status == ExitStatus.usage)
        #expect(withFleet.standardError.contains("not with --fleet"), "\(withFleet.standardError)")
    }
}
