import LongLinkCLISupport

/// The top of the `longlink` tool: picks the subcommand and runs it.
enum LongLinkTool {
    /// The subcommands that exist.
    static let commands: [any Subcommand.Type] = [
        DemoCommand.self, ServeCommand.self, RequestCommand.self, SubscribeCommand.self, InspectCommand.self,
        SoakCommand.self, ProbeCommand.self, ConformCommand.self,
    ]

    /// Runs the tool with `arguments` (without the program name) and returns the exit status.
    static func main(_ arguments: [String]) async -> Int32 {
        let out = Terminal.standardOutput
        let err = Terminal.standardError
        let (name, rest) = ArgumentParser.subcommand(arguments)
        guard let name else {
            if let first = arguments.first, first == "--help" || first == "-h" {
                out.write(helpText(terminal: out))
                return ExitStatus.success
            }
            let problem = arguments.first.map { "unknown option \($0)" } ?? "missing command"
            err.write("longlink: \(problem)\n\n" + helpText(terminal: err))
            return ExitStatus.usage
        }
        if name == "help" {
            guard let topic = rest.first else {
                out.write(helpText(terminal: out))
                return ExitStatus.success
            }
            return await main([topic, "--help"])
        }
        if let command = commands.first(where: { $0.spec.name == name }) {
            return await run(command, rest)
        }
        err.write("longlink: unknown command '\(name)'\n\n" + helpText(terminal: err))
        return ExitStatus.usage
    }

    private static func run(_ command: any Subcommand.Type, _ arguments: [String]) async -> Int32 {
        await command.spec.run(arguments) { parsed throws(UsageError) in try await command.run(parsed) }
    }

    /// `longlink --help`.
    static func helpText(terminal: Terminal) -> String {
        let rows = commands.map { [$0.spec.name, $0.spec.summary] }
        return """
            usage: longlink <command> [options]

            The LongLink command-line tool: a demo server, a client for requests and pushes, a prober
            of servers, a conformance checker for servers, a frame inspector and a chaos soak.

            \(terminal.styled("commands:", .bold))
            \(Terminal.columns(rows))
            Run 'longlink <command> --help' for a command's options.

            """
    }
}
