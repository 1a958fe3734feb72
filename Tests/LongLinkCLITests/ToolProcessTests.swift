import LongLinkTestSupport
import Testing

@Suite("longlink: help and usage errors", .sharedMachine)
struct ToolUsageTests {
    @Test func helpListsEveryCommand() async throws {
        let outcome = try await ToolProcess.run(["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("usage: longlink <command> [options]"))
        for command in ["serve", "inspect", "demo", "request", "subscribe", "probe", "soak"] {
            #expect(outcome.standardOutput.contains("\n  \(command) "), "\(command) missing from --help")
        }
        for built in ["serve", "request", "subscribe", "inspect", "demo", "soak", "probe"] {
            let line = outcome.standardOutput.split(separator: "\n").first { $0.hasPrefix("  \(built) ") }
            #expect(line?.contains("(not yet available)") == false, "\(built) is built")
        }
        // The benchmarks are longlink-bench, an executable of their own, not part of the tool.
        #expect(!outcome.standardOutput.contains("bench"))
        #expect(outcome.standardError.isEmpty)
    }

    @Test(arguments: ["serve", "request", "subscribe", "inspect", "demo", "soak", "probe"])
    func everyCommandHasHelp(_ command: String) async throws {
        let outcome = try await ToolProcess.run([command, "--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("usage: longlink \(command)"))
        #expect(outcome.standardOutput.contains("--help, -h"))
    }

    @Test func badFlagPrintsUsageAndExits2() async throws {
        let outcome = try await ToolProcess.run(["serve", "--prot", "0"])
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("longlink serve: unknown option --prot\n"))
        #expect(outcome.standardError.contains("usage: longlink serve [options]"))
    }

    @Test(arguments: [
        ["serve"],  // --port is required
        ["serve", "--port", "65536"],
        ["serve", "--port", "0", "--heartbeat", "soon"],
        ["serve", "--port", "0", "--max-connections", "0"],
        ["inspect", "a", "b"],
        ["demo", "--duration", "1s"],
        ["soak", "--duration", "2s"],
        ["soak", "--memory-growth", "-1"],
        ["soak", "--credential-lifetime", "100ms"],
        ["request", "echo"],  // --endpoint is required
        ["request", "--endpoint", "127.0.0.1:7000"],  // so is METHOD
        ["request", "--endpoint", "localhost", "echo"],
        ["request", "--endpoint", "127.0.0.1:7000", "echo", "--data", "a", "--data-file", "b"],
        ["request", "--endpoint", "127.0.0.1:7000", "echo", "--timeout", "0"],
        ["request", "--endpoint", "127.0.0.1:7000", "echo", "--login", "alice"],
        ["subscribe"],
        ["subscribe", "--endpoint", "127.0.0.1:7000", "--count", "0"],
        ["subscribe", "--endpoint", "127.0.0.1:7000", "--subscribe", "=x"],
        ["probe"],  // ENDPOINT is required
        ["probe", "localhost"],
        ["probe", "127.0.0.1:7000", "--pings", "many"],
        ["probe", "127.0.0.1:7000", "--timeout", "0"],
        ["request", "--endpoint", "127.0.0.1:7000", "--endpoint", "nowhere", "echo"],
        ["nonsense"],
        [],
    ])
    func usageErrorsExit2(_ arguments: [String]) async throws {
        let outcome = try await ToolProcess.run(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("usage: longlink"))
    }

    @Test func tlsFilesThatCannotBeReadFailTheServe() async throws {
        let outcome = try await ToolProcess.run(["serve", "--port", "0", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
        #expect(outcome.status == 1)
        #expect(outcome.standardError.contains("invalidConfiguration"), "\(outcome.standardError)")
        #expect(outcome.standardError.contains("c.pem"))
    }

    @Test(arguments: [
        ["serve", "--port", "0", "--tls-cert", "c.pem"],
        ["serve", "--port", "0", "--tls-client-ca", "ca.pem"],
        ["request", "--endpoint", "127.0.0.1:1", "--tls-ca", "ca.pem", "echo"],
        ["request", "--endpoint", "127.0.0.1:1", "--tls-insecure-for-testing", "echo"],
        ["request", "--endpoint", "127.0.0.1:1", "--tls", "--tls-pin", "short", "echo"],
    ])
    func tlsOptionMistakesAreUsageErrors(_ arguments: [String]) async throws {
        let outcome = try await ToolProcess.run(arguments)
        #expect(outcome.status == 2, "\(outcome.standardError)")
        #expect(outcome.standardError.contains("tls"))
    }

    @Test(arguments: [["bench"], ["bench", "wire"], ["bench", "--help"]])
    func benchIsAnUnknownCommand(_ arguments: [String]) async throws {
        let outcome = try await ToolProcess.run(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.standardOutput.isEmpty)
        #expect(outcome.standardError.hasPrefix("longlink: unknown command 'bench'\n"))
    }
}
