import Foundation
import LongLink
import LongLinkCLISupport

/// `longlink probe ENDPOINT...`: probes every endpoint at once as the client's balancer does, and
/// prints each one's round trips, load, cost and state, and the one the client would choose.
enum ProbeCommand: Subcommand {
    static let spec = CommandSpec(
        name: "probe",
        summary: "Measure servers' latency and load, as the client's balancer does.",
        discussion: """
            Probes every ENDPOINT at once: connect, Hello/Welcome, then --pings pings, all within
            --timeout (with --tls, the TLS handshake too). Prints one line per endpoint: its state (reachable, refused, timedOut, failed),
            the minimum and median round trip, the load it reported (0 to 1000), and its cost, the
            round trip inflated by the load: rtt / (1 - min(load, 0.95)). The endpoint the client
            would connect to first is marked with '*' and named on the last line. With --json, one
            JSON object instead: {"endpoints":[{"endpoint","state","rttMinMs","rttMedianMs",
            "loadPermille","costMs","serverId","error"}...],"chosen":ENDPOINT or null}.
            Exit status 0 when at least one endpoint answered, 1 when none did.
            Example: longlink probe 10.0.0.1:7000 10.0.0.2:7000 --json
            """,
        positionals: [
            PositionalSpec("ENDPOINT", help: "A server: HOST:PORT, [IPv6]:PORT or unix:/path.", isRepeated: true)
        ],
        options: [
            .value("pings", "N", help: "Pings per endpoint after Welcome (default 3)."),
            .value("timeout", "DURATION", help: "The budget of each probe (default 2s)."),
            .flag("json", help: "Print one JSON object."),
        ] + ClientSupport.tlsOptions
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let endpoints = try ClientSupport.endpoints(arguments.positionals, option: "ENDPOINT")
        var configuration = ClientConfiguration(endpoints: endpoints)
        if let pings = try arguments.integer("pings", in: 0...100) { configuration.balancing.probePings = pings }
        if let timeout = try arguments.duration("timeout") {
            guard timeout > .zero else { throw UsageError("--timeout must be more than zero") }
            configuration.balancing.probeTimeout = timeout
        }
        configuration.metadata["longlink.tool"] = "probe"
        configuration.tls = try ClientSupport.tlsConfiguration(arguments)
        let report = await LongLinkClient.probe(endpoints, configuration: configuration)
        let out = Terminal.standardOutput
        if arguments.flag("json") {
            out.line(json(report))
        } else {
            out.write(table(report))
        }
        return report.chosen == nil ? ExitStatus.failure : ExitStatus.success
    }

    static func milliseconds(_ duration: Duration?) -> String {
        guard let duration else { return "-" }
        let value = Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) * 1e-15
        return String(format: "%.2f", value)
    }

    static func table(_ report: ProbeReport) -> String {
        var rows = [["", "ENDPOINT", "STATE", "RTT MIN", "RTT MEDIAN", "LOAD", "COST", "SERVER"]]
        for probe in report.probes {
            rows.append([
                probe.endpoint == report.chosen ? "*" : "", "\(probe.endpoint)", probe.state.rawValue,
                milliseconds(probe.minimumRoundTrip), milliseconds(probe.medianRoundTrip),
                probe.loadPermille.map { "\($0)" } ?? "-",
                probe.cost.map { String(format: "%.2f", $0 * 1000) } ?? "-",
                probe.serverID.map(Terminal.escaped) ?? (probe.error.map { ClientSupport.describe($0) } ?? "-"),
            ])
        }
        var text = Terminal.columns(rows, indent: 0)
        text += report.chosen.map { "chosen: \($0)\n" } ?? "chosen: none (no endpoint answered)\n"
        return text
    }

    static func json(_ report: ProbeReport) -> String {
        let items = report.probes.map { probe -> String in
            var object = JSONObject()
            object.add("endpoint", "\(probe.endpoint)")
            object.add("state", probe.state.rawValue)
            object.addRaw("rttMinMs", probe.minimumRoundTrip.map { milliseconds($0) } ?? "null")
            object.addRaw("rttMedianMs", probe.medianRoundTrip.map { milliseconds($0) } ?? "null")
            object.addRaw("loadPermille", probe.loadPermille.map { "\($0)" } ?? "null")
            object.addRaw("costMs", probe.cost.map { String(format: "%.3f", $0 * 1000) } ?? "null")
            object.addRaw("serverId", probe.serverID.map { JSONObject.quoted($0) } ?? "null")
            object.addRaw("error", probe.error.map { JSONObject.quoted(ClientSupport.describe($0)) } ?? "null")
            return object.text()
        }
        var object = JSONObject()
        object.addRaw("endpoints", "[" + items.joined(separator: ",") + "]")
        object.addRaw("chosen", report.chosen.map { JSONObject.quoted("\($0)") } ?? "null")
        return object.text()
    }
}
