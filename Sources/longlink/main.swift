// The `longlink` command-line tool. For now only `longlink bench wire [--seconds S]`; the full
// command set (demo, serve, request, subscribe, probe, bench) arrives with its issues.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.starts(with: ["bench", "wire"]) {
    var seconds = 8.0
    if let flag = arguments.firstIndex(of: "--seconds") {
        guard flag + 1 < arguments.count, let value = Double(arguments[flag + 1]), value > 0 else {
            FileHandle.standardError.write(Data("longlink: --seconds needs a positive number\n".utf8))
            exit(2)
        }
        seconds = value
    }
    print(WireBenchmark.run(seconds: seconds))
} else {
    FileHandle.standardError.write(Data("usage: longlink bench wire [--seconds S]\n".utf8))
    exit(2)
}
