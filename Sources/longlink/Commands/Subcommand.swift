import LongLinkCLISupport

/// One `longlink` subcommand.
protocol Subcommand: Sendable {
    /// Its name, options and help text.
    static var spec: CommandSpec { get }

    /// Runs the command with its parsed arguments and returns the exit status. Throwing a
    /// ``UsageError`` (a value out of range, a missing option) prints it with the usage, status 2.
    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32
}
