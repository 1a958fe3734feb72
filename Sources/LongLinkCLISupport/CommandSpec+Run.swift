extension CommandSpec {
    /// Parses `arguments` (those after the command's name) and runs `body` with them, or prints
    /// the help text. A ``UsageError``, from the parser or from `body`, is printed with the usage
    /// to standard error and gives status 2. Returns the exit status.
    package func run(
        _ arguments: [String], _ body: (ParsedArguments) async throws(UsageError) -> Int32
    ) async -> Int32 {
        do throws(UsageError) {
            let parsed = try ArgumentParser.parse(arguments, for: self)
            if parsed.helpRequested {
                Terminal.standardOutput.write(helpText(terminal: .standardOutput))
                return ExitStatus.success
            }
            return try await body(parsed)
        } catch {
            let err = Terminal.standardError
            err.write("\(invocation): \(error.message)\n\n" + helpText(terminal: err))
            return ExitStatus.usage
        }
    }
}
