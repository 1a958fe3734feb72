import Foundation
import LongLinkTestSupport
import Testing

/// `longlink probe` and several `--endpoint`s, run as processes against `longlink serve`.
@Suite("longlink probe")
struct ProbeCommandTests {
    /// A near server reporting 95% load, an idle one, and a port nobody listens on: the probe
    /// reports each as it is and chooses the idle one.
    @Test func probeReportsEachEndpointAndTheChoice() async throws {
        let (jammed, jammedPort) = try await ServeCommandTests.startServer([
            "--quiet", "--no-feed", "--server-id", "jammed", "--report-load", "950",
        ])
        defer { jammed.terminate() }
        let (idle, idlePort) = try await ServeCommandTests.startServer(["--quiet", "--no-feed", "--server-id", "idle"])
        defer { idle.terminate() }
        let closed = try await freePort()
        let endpoints = ["127.0.0.1:\(jammedPort)", "127.0.0.1:\(idlePort)", "127.0.0.1:\(closed)"]

        let outcome = try await ToolProcess.run(["probe"] + endpoints + ["--json", "--pings", "2"])
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        let json = try JSONSerialization.jsonObject(with: Data(outcome.standardOutput.utf8)) as? [String: Any]
        let probes = json?["endpoints"] as? [[String: Any]] ?? []
        #expect(probes.map { $0["endpoint"] as? String } == endpoints)
        #expect(probes.map { $0["state"] as? String } == ["reachable", "reachable", "refused"])
        #expect(probes.map { $0["serverId"] as? String } == ["jammed", "idle", nil])
        #expect(probes[0]["loadPermille"] as? Int == 950)
        #expect(probes[1]["loadPermille"] as? Int == 0)
        #expect((probes[1]["rttMinMs"] as? Double ?? -1) >= 0)
        #expect(probes[2]["costMs"] is NSNull)
        #expect(json?["chosen"] as? String == endpoints[1])

        let table = try await ToolProcess.run(["probe"] + endpoints)
        #expect(table.status == 0)
        let lines = table.standardOutput.split(separator: "\n")
        #expect(lines.first?.contains("RTT MEDIAN") == true)
        #expect(lines.contains { $0.hasPrefix("*") && $0.contains(endpoints[1]) && $0.contains("reachable") })
        #expect(lines.last == "chosen: \(endpoints[1])")
    }

    @Test func noEndpointAnsweringExits1() async throws {
        let closed = try await freePort()
        let outcome = try await ToolProcess.run(["probe", "127.0.0.1:\(closed)", "--timeout", "1s"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.contains("refused"))
        #expect(outcome.standardOutput.hasSuffix("chosen: none (no endpoint answered)\n"))
    }

    /// `request` with a dead endpoint first and a live one second gets its reply from the live one.
    @Test func requestBalancesAcrossSeveralEndpoints() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let closed = try await freePort()
        let outcome = try await ToolProcess.run([
            "request", "--endpoint", "127.0.0.1:\(closed)", "--endpoint", "127.0.0.1:\(port)", "echo", "--data", "hi",
        ])
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.standardOutput == "hi\n")
    }
}
