// `longlink-bench`: the benchmarks, apart from the shipped `longlink` tool. `BenchCommand` parses
// the command line and runs the scenarios; each scenario has a file of its own here.
import Foundation

exit(await BenchCommand.main(Array(CommandLine.arguments.dropFirst())))
