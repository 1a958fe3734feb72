/// The tool's exit statuses.
enum ExitStatus {
    /// Success, and `--help`.
    static let success: Int32 = 0
    /// The command ran and failed: malformed input, a port in use.
    static let failure: Int32 = 1
    /// The command line was wrong, or the command is not available (yet).
    static let usage: Int32 = 2
}

/// One `longlink` subcommand.
protocol Subcommand: Sendable {
    /// Its name, options and help text.
    static var spec: CommandSpec { get }

    /// Runs the command with its parsed arguments and returns the exit status. Throwing a
    /// ``UsageError`` (a value out of range, a missing option) prints it with the usage, status 2.
    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32
}
