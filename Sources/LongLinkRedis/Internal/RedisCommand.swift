/// One command as Redis receives it: an array of binary-safe arguments.
struct RedisCommand: Sendable, Equatable {
    var arguments: [[UInt8]]
    /// Which of ``arguments`` are keys: what a cluster routes the command by. Empty for a command
    /// without keys; one Redis ignores it.
    var keys: Range<Int> = 0..<0

    init(_ arguments: [[UInt8]]) {
        self.arguments = arguments
    }

    /// A command whose arguments at `keys` are keys.
    init(_ arguments: [[UInt8]], keys: Range<Int>) {
        self.arguments = arguments
        self.keys = keys.clamped(to: arguments.indices)
    }

    /// A command from text arguments (names, keys, numbers).
    init(_ name: String, _ arguments: String...) {
        self.arguments = [Array(name.utf8)] + arguments.map { Array($0.utf8) }
    }

    /// The command with `keys` marking which arguments are keys (for a cluster's routing).
    func keyed(_ keys: Range<Int>) -> RedisCommand {
        var command = self
        command.keys = keys.clamped(to: arguments.indices)
        return command
    }

    /// The command's name, for errors and logs (never its arguments, which may hold payloads).
    var name: String { arguments.first.map { String(decoding: $0, as: UTF8.self) } ?? "" }

    /// Appends the command as a RESP array of bulk strings.
    func encode(into bytes: inout [UInt8]) {
        Self.appendHeader(UInt8(ascii: "*"), arguments.count, to: &bytes)
        for argument in arguments {
            Self.appendHeader(UInt8(ascii: "$"), argument.count, to: &bytes)
            bytes.append(contentsOf: argument)
            bytes.append(13)
            bytes.append(10)
        }
    }

    private static func appendHeader(_ type: UInt8, _ count: Int, to bytes: inout [UInt8]) {
        bytes.append(type)
        bytes.append(contentsOf: String(count).utf8)
        bytes.append(13)
        bytes.append(10)
    }
}
