// The `longlink` command-line tool. `LongLinkTool` picks the subcommand; each one lives in
// Commands/, with the parser and terminal helpers in Support/.
import Foundation

exit(await LongLinkTool.main(Array(CommandLine.arguments.dropFirst())))
