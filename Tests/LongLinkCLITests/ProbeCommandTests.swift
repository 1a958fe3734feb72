import Foundation
import LongLinkTestSupport
import Testing

/// `longlink probe` and several `--endpoint`s, run as processes against `longlink serve`.
@Suite("longlink probe", .sharedMachine)
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
        // A socket file that does not exist: refused, and no other test can be listening there.
        let closed = "unix:/tmp/longlink-no-such-server-\(UInt64.random(in: 0...UInt64.max))"
        let endpoints = ["127.0.0.1:\(jammedPort)", "127.0.0.1:\(idlePort)", closed]

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
        // The choice follows the costs measured in this run (round trips on a loaded machine vary),
        // and the load counts: 95% makes the cost at least 20 times the shortest round trip.
        let costs = probes.prefix(2).map { $0["costMs"] as? Double ?? .infinity }
        #expect(json?["chosen"] as? String == endpoints[costs[0] < costs[1] ? 0 : 1])
        #expect(costs[0] >= 20 * (probes[0]["rttMinMs"] as? Double ?? .infinity) * 0.999)

        let table = try await ToolProcess.run(["probe"] + endpoints)
        #expect(table.status == 0)
        let lines = table.standardOutput.split(separator: "\n")
        #expect(lines.first?.contains("RTT MEDIAN") == true)
        let marked = lines.filter { $0.hasPrefix("*") }
        #expect(marked.count == 1 && marked[0].contains("reachable"))
        #expect(lines.last.map { line in endpoints.prefix(2).contains { line == "chosen: \($0)" } } == true)
        #expect(lines.contains { $0.contains(closed) && $0.contains("refused") })
    }

    @Test func noEndpointAnsweringExits1() async throws {
        let closed = "unix:/tmp/longlink-no-such-server-\(UInt64.random(in: 0...UInt64.max))"
        let outcome = try await ToolProcess.run(["probe", closed, "--timeout", "1s"])
        #expect(outcome.status == 1)
        #expect(outcome.standardOutput.contains("refused"))
        #expect(outcome.standardOutput.hasSuffix("chosen: none (no endpoint answered)\n"))
    }

    /// `request` with a dead endpoint first and a live one second gets its reply from the live one.
    @Test func requestBalancesAcrossSeveralEndpoints() async throws {
        let (server, port) = try await ServeCommandTests.startServer(["--quiet", "--no-feed"])
        defer { server.terminate() }
        let closed = "unix:/tmp/longlink-no-such-server-\(UInt64.random(in: 0...UInt64.max))"
        let outcome = try await ToolProcess.run([
            "request", "--endpoint", closed, "--endpoint", "127.0.0.1:\(port)", "echo", "--data", "hi",
        ])
        #expect(outcome.status == 0, "stderr: \(outcome.standardError)")
        #expect(outcome.standardOutput == "hi\n")
    }
}
