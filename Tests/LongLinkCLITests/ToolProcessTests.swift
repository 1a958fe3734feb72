import Testing

@Suite("longlink: help and usage errors")
struct ToolUsageTests {
    @Test func helpListsEveryCommand() async throws {
        let outcome = try await ToolProcess.run(["--help"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.hasPrefix("usage: longlink <command> [options]"))
        for command in ["serve", "inspect", "bench", "demo", "request", "subscribe", "probe", "soak"] {
            #expect(outcome.standardOutput.contains("\n  \(command) "), "\(command) missing from --help")
        }
        for planned in ["demo", "request", "subscribe", "probe", "soak"] {
            let line = outcome.standardOutput.split(separator: "\n").first { $0.hasPrefix("  \(planned) ") }
            #expect(line?.contains("(not yet available)") == true)
        }
        #expect(outcome.standardError.isEmpty)
    }

    @Test(arguments: ["serve", "inspect", "bench"])
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
        ["bench", "network"],
        ["nonsense"],
        [],
    ])
    func usageErrorsExit2(_ arguments: [String]) async throws {
        let outcome = try await ToolProcess.run(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("usage: longlink"))
    }

    @Test(arguments: ["demo", "request", "subscribe", "probe", "soak"])
    func plannedCommandsSaySo(_ command: String) async throws {
        let outcome = try await ToolProcess.run([command, "--help"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("not yet available"))
    }

    @Test func tlsIsRefusedForNow() async throws {
        let outcome = try await ToolProcess.run(["serve", "--port", "0", "--tls-cert", "c.pem", "--tls-key", "k.pem"])
        #expect(outcome.status == 2)
        #expect(outcome.standardError.contains("TLS is not available yet"))
    }

    @Test func benchWireRuns() async throws {
        let outcome = try await ToolProcess.run(["bench", "wire", "--duration", "50ms", "--runs", "1"])
        #expect(outcome.status == 0)
        #expect(outcome.standardOutput.contains("small request"))
        #expect(outcome.standardOutput.contains("64 KiB push"))
    }
}
