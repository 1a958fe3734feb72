/// The exit statuses of `longlink` and `longlink-bench`.
package enum ExitStatus {
    /// Success, and `--help`.
    package static let success: Int32 = 0
    /// The command ran and failed: malformed input, a port in use.
    package static let failure: Int32 = 1
    /// The command line was wrong, or the command is not available (yet).
    package static let usage: Int32 = 2
}
