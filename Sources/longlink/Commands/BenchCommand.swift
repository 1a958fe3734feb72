/// `longlink bench [SCENARIO] [--seconds S]`: benchmarks. Only `wire` exists so far.
enum BenchCommand: Subcommand {
    static let scenarios = ["wire"]

    static let spec = CommandSpec(
        name: "bench",
        summary: "Measure performance. Scenarios: wire (the frame codec); more come later.",
        discussion: """
            wire   Encode and decode throughput of small request frames and 64 KiB push frames.
                   The default scenario. Scenarios over the network arrive with the client.
            """,
        positionals: [PositionalSpec("SCENARIO", help: "What to measure: wire (the default).", isOptional: true)],
        options: [
            .value("seconds", "DURATION", help: "Total measuring time: 8 (seconds), 500ms, 1m. Default 8s.")
        ]
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let scenario = arguments.positionals.first ?? "wire"
        guard scenarios.contains(scenario) else {
            throw UsageError("unknown scenario '\(scenario)' (available: \(scenarios.joined(separator: ", ")))")
        }
        let duration = try arguments.duration("seconds") ?? .seconds(8)
        guard duration > .zero else { throw UsageError("--seconds must be more than zero") }
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        if arguments.positionals.isEmpty {
            Terminal.standardError.line("longlink bench: running 'wire' (the only scenario so far)")
        }
        Terminal.standardOutput.line(WireBenchmark.run(seconds: seconds))
        return ExitStatus.success
    }
}
