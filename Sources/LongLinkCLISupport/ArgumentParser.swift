/// A mistake on the command line. The tool prints it with the command's usage to standard error
/// and exits with status 2.
package struct UsageError: Error, Hashable, CustomStringConvertible {
    /// What was wrong, for people: `unknown option --prot`.
    package var message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { message }
}

/// One option a command accepts, without its leading dashes.
package struct OptionSpec: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// A boolean flag: `--no-feed`. It takes no value.
        case flag
        /// An option with a value: `--port 0` or `--port=0`; `placeholder` names the value in usage.
        case value(placeholder: String)
    }

    package var name: String
    package var kind: Kind
    package var help: String

    /// A boolean flag.
    package static func flag(_ name: String, help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help)
    }

    /// An option that takes a value.
    package static func value(_ name: String, _ placeholder: String, help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .value(placeholder: placeholder), help: help)
    }

    /// `--port PORT` or `--no-feed`, as shown in usage.
    package var synopsis: String {
        switch kind {
        case .flag: "--\(name)"
        case .value(let placeholder): "--\(name) \(placeholder)"
        }
    }
}

/// A positional argument a command accepts.
package struct PositionalSpec: Sendable, Hashable {
    package var name: String
    package var help: String
    /// Optional positionals may be left out; they come after the required ones.
    package var isOptional: Bool
    /// The last positional may take every argument left (`ENDPOINT...`).
    package var isRepeated: Bool

    package init(_ name: String, help: String, isOptional: Bool = false, isRepeated: Bool = false) {
        self.name = name
        self.help = help
        self.isOptional = isOptional
        self.isRepeated = isRepeated
    }
}

/// What a command accepts, and its help text.
package struct CommandSpec: Sendable {
    /// The program: `longlink`, or `longlink-bench`, which is one command with no subcommands.
    package var program: String
    /// The word after the program: `serve`, `inspect`; empty when the program is the command.
    package var name: String
    /// One line for `longlink --help`.
    package var summary: String
    /// Paragraphs printed after the synopsis in `--help`.
    package var discussion: String
    package var positionals: [PositionalSpec]
    package var options: [OptionSpec]

    /// A `longlink` subcommand by default; `name: ""` with another `program` for a program that
    /// is a single command.
    package init(
        program: String = "longlink", name: String, summary: String, discussion: String = "",
        positionals: [PositionalSpec] = [], options: [OptionSpec] = []
    ) {
        self.program = program
        self.name = name
        self.summary = summary
        self.discussion = discussion
        self.positionals = positionals
        self.options = options
    }

    /// `longlink serve` or `longlink-bench`: how usage lines and messages name the command.
    package var invocation: String {
        name.isEmpty ? program : "\(program) \(name)"
    }

    /// The option with this name, if the command has one.
    package func option(named name: String) -> OptionSpec? {
        options.first { $0.name == name }
    }

    /// `usage: longlink serve [options]`, the short form printed after an argument error.
    package var synopsis: String {
        var words = ["usage: \(invocation)"]
        if !options.isEmpty { words.append("[options]") }
        for positional in positionals {
            let name = positional.isRepeated ? positional.name + "..." : positional.name
            words.append(positional.isOptional ? "[\(name)]" : name)
        }
        return words.joined(separator: " ")
    }

    /// The full `--help` text.
    package func helpText(terminal: Terminal) -> String {
        var text = synopsis + "\n\n" + summary + "\n"
        if !discussion.isEmpty {
            text += "\n" + discussion + "\n"
        }
        if !positionals.isEmpty {
            text += "\n" + terminal.styled("arguments:", .bold) + "\n"
            text += Terminal.columns(positionals.map { [$0.name, $0.help] })
        }
        let rows = options.map { [$0.synopsis, $0.help] } + [["--help, -h", "Show this help and exit."]]
        text += "\n" + terminal.styled("options:", .bold) + "\n"
        text += Terminal.columns(rows)
        return text
    }
}

/// The arguments of one command after parsing: option values, flags and positionals.
package struct ParsedArguments: Sendable, Hashable {
    /// Values of options that take one; the last occurrence wins.
    package var values: [String: String] = [:]
    /// Every value of each option, in command-line order (for options that may repeat).
    package var repeatedValues: [String: [String]] = [:]
    /// Flags that were given.
    package var flags: Set<String> = []
    /// Positional arguments in order.
    package var positionals: [String] = []
    /// `--help` or `-h` appeared (before any `--`); nothing else was checked.
    package var helpRequested = false

    package init() {}

    /// Whether the flag was given.
    package func flag(_ name: String) -> Bool {
        flags.contains(name)
    }

    /// The option's value, if it was given.
    package func value(_ name: String) -> String? {
        values[name]
    }

    /// Every value the option was given, in order: `--subscribe a --subscribe b` gives `[a, b]`.
    package func allValues(_ name: String) -> [String] {
        repeatedValues[name] ?? []
    }

    /// The option's value as a whole number within `range`.
    package func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(
                "--\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    /// The option's value as a duration: `250ms`, `5s`, `2m`, `1h`, or plain seconds (`1.5`).
    package func duration(_ name: String) throws(UsageError) -> Duration? {
        guard let text = values[name] else { return nil }
        guard let duration = DurationText.parse(text) else {
            throw UsageError("--\(name) needs a duration such as 250ms, 5s, 2m or 1.5 (seconds), not '\(text)'")
        }
        return duration
    }
}

/// The tool's own small argument parser.
///
/// Accepted forms: `--name value` and `--name=value` for options with a value; `--flag` for
/// boolean flags; anything else is a positional. `-` alone is a positional (standard input), and
/// every argument after `--` is one. `--help` or `-h` anywhere before `--` asks for help, whatever
/// else is on the line. An option given twice keeps its last value in `value(_:)`; `allValues(_:)`
/// has every one, for options that may repeat.
package enum ArgumentParser {
    /// Splits `arguments` (without the program name) into the subcommand and the rest. The
    /// subcommand is nil when the first argument is missing or looks like an option.
    package static func subcommand(_ arguments: [String]) -> (name: String?, rest: [String]) {
        guard let first = arguments.first, !first.hasPrefix("-") else { return (nil, arguments) }
        return (first, Array(arguments.dropFirst()))
    }

    /// Parses the arguments after the subcommand against `spec`.
    package static func parse(_ arguments: [String], for spec: CommandSpec) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        let beforeTerminator = arguments.prefix { $0 != "--" }
        if beforeTerminator.contains(where: { $0 == "--help" || $0 == "-h" }) {
            parsed.helpRequested = true
            return parsed
        }
        var index = 0
        var onlyPositionals = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            guard argument.hasPrefix("--") else {
                throw UsageError("unknown option \(argument)")
            }
            let body = argument.dropFirst(2)
            let name: String
            var inlineValue: String?
            if let equals = body.firstIndex(of: "=") {
                name = String(body[..<equals])
                inlineValue = String(body[body.index(after: equals)...])
            } else {
                name = String(body)
            }
            guard let option = spec.option(named: name) else {
                throw UsageError("unknown option --\(name)")
            }
            switch option.kind {
            case .flag:
                guard inlineValue == nil else { throw UsageError("--\(name) takes no value") }
                parsed.flags.insert(name)
            case .value:
                let value: String
                if let inlineValue {
                    value = inlineValue
                } else {
                    guard index < arguments.count, !arguments[index].hasPrefix("--") else {
                        throw UsageError("--\(name) needs a value")
                    }
                    value = arguments[index]
                    index += 1
                }
                parsed.values[name] = value
                parsed.repeatedValues[name, default: []].append(value)
            }
        }
        let required = spec.positionals.filter { !$0.isOptional }.count
        if parsed.positionals.count < required {
            throw UsageError("missing \(spec.positionals[parsed.positionals.count].name)")
        }
        if parsed.positionals.count > spec.positionals.count, spec.positionals.last?.isRepeated != true {
            throw UsageError("unexpected argument '\(parsed.positionals[spec.positionals.count])'")
        }
        return parsed
    }
}
