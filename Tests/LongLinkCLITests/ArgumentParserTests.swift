import LongLinkCLISupport
import LongLinkTestSupport
import Testing

@testable import longlink

@Suite("Argument parser", .sharedMachine)
struct ArgumentParserTests {
    static let spec = CommandSpec(
        name: "test",
        summary: "A command for tests.",
        positionals: [PositionalSpec("FILE", help: "A file.", isOptional: true)],
        options: [
            .value("port", "PORT", help: "A port."),
            .value("heartbeat", "DURATION", help: "A duration."),
            .flag("no-feed", help: "A flag."),
        ]
    )

    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        try ArgumentParser.parse(arguments, for: Self.spec)
    }

    @Test func valuesWithSpaceOrEquals() throws {
        #expect(try parse(["--port", "0"]).value("port") == "0")
        #expect(try parse(["--port=0"]).value("port") == "0")
        #expect(try parse(["--port="]).value("port") == "")
        #expect(try parse(["--port", "-1"]).value("port") == "-1")
        #expect(try parse(["--port", "1", "--port", "2"]).value("port") == "2")
    }

    @Test func repeatedValuesKeepEveryOne() throws {
        let parsed = try parse(["--port", "1", "--heartbeat=2s", "--port=2", "--port", "3"])
        #expect(parsed.allValues("port") == ["1", "2", "3"])
        #expect(parsed.allValues("heartbeat") == ["2s"])
        #expect(parsed.allValues("no-feed").isEmpty)
        #expect(parsed.value("port") == "3")
    }

    @Test func flagsAndPositionals() throws {
        let parsed = try parse(["--no-feed", "frames.bin", "--port", "7"])
        #expect(parsed.flag("no-feed"))
        #expect(!parsed.flag("other"))
        #expect(parsed.positionals == ["frames.bin"])
        #expect(try parse(["-"]).positionals == ["-"])
        #expect(try parse(["--", "--port"]).positionals == ["--port"])
        #expect(try parse([]).positionals.isEmpty)
    }

    @Test func helpAnywhereBeforeTerminator() throws {
        #expect(try parse(["--help"]).helpRequested)
        #expect(try parse(["--bogus", "-h"]).helpRequested)
        #expect(throws: UsageError("unknown option --bogus")) { try parse(["--bogus", "--", "--help"]) }
    }

    @Test func mistakes() {
        #expect(throws: UsageError("unknown option --prot")) { try parse(["--prot", "1"]) }
        #expect(throws: UsageError("unknown option -p")) { try parse(["-p", "1"]) }
        #expect(throws: UsageError("--port needs a value")) { try parse(["--port"]) }
        #expect(throws: UsageError("--port needs a value")) { try parse(["--port", "--no-feed"]) }
        #expect(throws: UsageError("--no-feed takes no value")) { try parse(["--no-feed=yes"]) }
        #expect(throws: UsageError("unexpected argument 'b'")) { try parse(["a", "b"]) }
    }

    @Test func requiredPositional() {
        let spec = CommandSpec(name: "x", summary: "", positionals: [PositionalSpec("NAME", help: "")])
        #expect(throws: UsageError("missing NAME")) { try ArgumentParser.parse([], for: spec) }
    }

    @Test func typedValues() throws {
        #expect(try parse(["--port", "65535"]).integer("port", in: 0...65_535) == 65_535)
        #expect(try parse([]).integer("port", in: 0...65_535) == nil)
        #expect(throws: UsageError.self) { try parse(["--port", "65536"]).integer("port", in: 0...65_535) }
        #expect(throws: UsageError.self) { try parse(["--port", "http"]).integer("port", in: 0...65_535) }
        #expect(try parse(["--heartbeat=250ms"]).duration("heartbeat") == .milliseconds(250))
        #expect(throws: UsageError.self) { try parse(["--heartbeat", "soon"]).duration("heartbeat") }
    }

    @Test func subcommandSplit() {
        #expect(ArgumentParser.subcommand(["serve", "--port", "0"]) == ("serve", ["--port", "0"]))
        #expect(ArgumentParser.subcommand(["--help"]) == (nil, ["--help"]))
        #expect(ArgumentParser.subcommand([]) == (nil, []))
    }

    @Test func usageText() {
        let text = Self.spec.helpText(terminal: Terminal(fileDescriptor: -1))
        #expect(text.hasPrefix("usage: longlink test [options] [FILE]\n"))
        #expect(text.contains("  --port PORT           A port.\n"))
        #expect(text.contains("  --help, -h            Show this help and exit.\n"))
    }
}

@Suite("Durations on the command line", .sharedMachine)
struct DurationTextTests {
    @Test func units() {
        #expect(DurationText.parse("5s") == .seconds(5))
        #expect(DurationText.parse("250ms") == .milliseconds(250))
        #expect(DurationText.parse("2m") == .seconds(120))
        #expect(DurationText.parse("1h") == .seconds(3_600))
        #expect(DurationText.parse("5") == .seconds(5))
        #expect(DurationText.parse("0") == .zero)
        #expect(DurationText.parse("0ms") == .zero)
    }

    @Test func fractionsAreExact() {
        #expect(DurationText.parse("1.5") == .milliseconds(1_500))
        #expect(DurationText.parse("0.1s") == .milliseconds(100))
        #expect(DurationText.parse(".5s") == .milliseconds(500))
        #expect(DurationText.parse("1.25m") == .seconds(75))
        #expect(DurationText.parse("0.5ms") == .microseconds(500))
        #expect(DurationText.parse("0.0000000019s") == .nanoseconds(1))
    }

    @Test func rejects() {
        for text in ["", "s", "ms", "-1s", "+1s", "5x", " 5s", "5s ", "1e3", "5.", ".", "1.2.3", "5 s", "٣s", "5sm"] {
            #expect(DurationText.parse(text) == nil, "\(text)")
        }
        #expect(DurationText.parse("99999999999h") == nil)
    }

    @Test func formatRoundTrips() {
        for duration: Duration in [.milliseconds(250), .seconds(15), .seconds(120), .seconds(7_200), .zero] {
            #expect(DurationText.parse(DurationText.format(duration)) == duration)
        }
        #expect(DurationText.format(.seconds(15)) == "15s")
        #expect(DurationText.format(.milliseconds(1_500)) == "1500ms")
        #expect(DurationText.format(.seconds(120)) == "2m")
    }
}

@Suite("Terminal helpers", .sharedMachine)
struct TerminalTests {
    @Test func columnsAlign() {
        let text = Terminal.columns([["a", "one"], ["long-name", "two"]])
        #expect(text == "  a          one\n  long-name  two\n")
    }

    @Test func noColourWhenNotATerminal() {
        let terminal = Terminal(fileDescriptor: -1)
        #expect(!terminal.usesColour)
        #expect(terminal.styled("x", .bold) == "x")
    }
}
