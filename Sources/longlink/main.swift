// The `longlink` command-line tool. `LongLinkTool` picks the subcommand; each one lives in
// Commands/, with its helpers in Support/ and the parser and terminal output in LongLinkCLISupport
// (shared with longlink-bench).
import Foundation

exit(await LongLinkTool.main(Array(CommandLine.arguments.dropFirst())))
