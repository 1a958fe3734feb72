import LongLinkCLISupport
import LongLinkTransport

/// `longlink conform --endpoint HOST:PORT`: checks a LongLink server, written in any language,
/// against Protocol.md, one line per rule.
enum ConformCommand: Subcommand {
    static let spec = CommandSpec(
        name: "conform",
        summary: "Check a server of any language against the wire protocol, one line per rule.",
        discussion: """
            Speaks raw frames to the server at --endpoint over plain TCP (or a Unix-domain socket)
            and checks it against Protocol.md: the handshake and its refusals, framing (split and
            merged frames, empty and unknown frames, frames too large, malformed ones), requests
            (correlation, unknown methods, Cancel, timeout_ms), de-duplication, reliable pushes
            (Sync, seq order, epochs, Ack, redelivery) and the client's GoAway. Prints one line per
            rule as it finishes:
              PASS rule-id: what the server must do
              FAIL rule-id: what the server must do: what was seen
              SKIP rule-id: why it could not be checked
            and 'N passed, M failed, K skipped' last. Rules that need an application method use
            the conformance contract of Protocol.md ("Checking a server: longlink conform"): login,
            echo, sleep, count and emit, as 'longlink serve' has them; a rule whose method the
            server answers UNIMPLEMENTED is skipped, naming the method. TLS is not supported: check
            a server on a plain port. Each run uses client ids and user names of its own.
            Exit status 0 when no rule failed, 1 otherwise, 2 for bad options.
            Example: longlink conform --endpoint 127.0.0.1:7000 --rule handshake --rule framing
            """,
        options: [
            .value("endpoint", "HOST:PORT", help: "The server: HOST:PORT, [IPv6]:PORT or unix:/path (required)."),
            .value("timeout", "DURATION", help: "The bound of every wait of every step (default 5s)."),
            .value("rule", "PREFIX", help: "Run only the rules whose id starts with PREFIX (repeatable)."),
            .flag("list", help: "Print the rules' ids and descriptions and exit."),
            .flag("json", help: "Print one JSON object at the end instead of lines."),
        ]
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let out = Terminal.standardOutput
        let prefixes = arguments.allValues("rule")
        let rules = ConformRule.all.filter { rule in prefixes.isEmpty || prefixes.contains { rule.id.hasPrefix($0) } }
        if arguments.flag("list") {
            for rule in rules { out.line("\(rule.id): \(rule.description)") }
            return ExitStatus.success
        }
        guard let text = arguments.value("endpoint") else { throw UsageError("--endpoint is required") }
        guard let endpoint = Endpoint(parsing: text) else {
            throw UsageError("--endpoint needs HOST:PORT, [IPv6]:PORT or unix:/path, not '\(text)'")
        }
        let timeout = try arguments.duration("timeout") ?? .seconds(5)
        guard timeout > .zero else { throw UsageError("--timeout must be more than zero") }
        guard !rules.isEmpty else { throw UsageError("no rule id starts with \(prefixes.joined(separator: " or "))") }
        let context = ConformContext(endpoint: endpoint, timeout: timeout)
        do {
            _ = try ConformSocket.connect(to: endpoint, within: timeout)
        } catch {
            Terminal.standardError.line("longlink conform: \(error.message)")
            return ExitStatus.failure
        }
        let json = arguments.flag("json")
        var results: [ConformResult] = []
        for rule in rules {
            let result = ConformResult.run(rule, in: context)
            if !json { out.line(Terminal.escaped(result.line)) }
            results.append(result)
        }
        let summary = ConformSummary(results)
        out.line(json ? summary.json(endpoint: endpoint) : summary.line)
        return summary.failed == 0 ? ExitStatus.success : ExitStatus.failure
    }
}
