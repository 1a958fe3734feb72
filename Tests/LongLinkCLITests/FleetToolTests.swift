import Foundation
import LongLinkCLISupport
import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import longlink

/// Whether the tests that need `redis-server` run: always under CI (where a missing binary must
/// fail them, not skip them), elsewhere when the binary is there; otherwise one line says why.
let fleetToolTestsEnabled: Bool = {
    if LocalRedisServer.locate() != nil || ProcessInfo.processInfo.environment["CI"] != nil { return true }
    print("FleetToolTests: redis-server not found (Debian package redis-server); the tool's fleet tests are skipped")
    return false
}()

/// The value of the summary row whose label is `label` (`lost 0` → "0"), nil when absent.
func summaryValue(_ label: String, in output: String) -> String? {
    for line in output.split(separator: "\n") {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix(label + " ") else { continue }
        return trimmed.dropFirst(label.count).trimmingCharacters(in: .whitespaces)
    }
    return nil
}

// Serialized: each test runs several servers, a Redis and a client in processes of their own,
// which run in parallel would starve other tests' bounded waits on a small machine.
@Suite(
    "longlink serve --redis, demo --fleet, soak --fleet", .sharedMachine, .enabled(if: fleetToolTestsEnabled),
    .serialized)
struct FleetToolTests {
    /// Two `serve --redis` processes on one Redis: pushes produced on one reach a connection of
    /// the same user on the other, and a request resent to the other is answered from the shared
    /// window instead of running again.
    @Test(.timeLimit(.minutes(10)))
    func twoServeProcessesShareTheirPushesAndTheirDedupWindow() async throws {
        let redis = try await LocalRedisServer.start()
        do {
            try await shareThroughRedis(redis)
        } catch {
            await redis.stop()
            throw error
        }
        await redis.stop()
    }

    private func shareThroughRedis(_ redis: LocalRedisServer) async throws {
        let prefix = "cli-\(UInt32.random(in: 0...UInt32.max)):"
        let arguments = ["--quiet", "--no-feed", "--redis", redis.url, "--redis-prefix", prefix]
        let (serverA, portA) = try await ServeCommandTests.startServer(arguments)
        defer { serverA.terminate() }
        let (serverB, portB) = try await ServeCommandTests.startServer(arguments)
        defer { serverB.terminate() }

        // The same client (id and user) on both servers, as after a failover.
        let onA = try await FrameClient.connect(host: "127.0.0.1", port: portA)
        defer { onA.close() }
        let onB = try await FrameClient.connect(host: "127.0.0.1", port: portB)
        defer { onB.close() }
        _ = try await onA.handshake(clientID: "fleet-client")
        _ = try await onB.handshake(clientID: "fleet-client")
        // Login ids differ: before login there is no principal, and the window would join them.
        #expect(try await onA.call("login", "alice", id: "login-a").status == nil)
        #expect(try await onB.call("login", "alice", id: "login-b").status == nil)
        try await onA.send(.sync(Frame.Sync()))

        let emit = #"{"topic":"t","n":3,"reliable":true}"#
        let onBReply = try await onB.call("emit", emit, id: "e1")
        #expect(onBReply.status == nil, "\(onBReply)")
        #expect(try object(onBReply)["first_seq"] as? Int == 1)
        var seqs: [UInt64] = []
        for _ in 0..<3 { seqs.append(try await onA.push(topic: "t", within: .seconds(10)).seq) }
        #expect(seqs == [1, 2, 3])
        try await onA.send(.ack(Frame.Ack(seqs: seqs)))

        // The same request id again, now on A: the stored reply, not a second emission.
        let resent = try await onA.call("emit", emit, id: "e1")
        #expect(resent.status == nil)
        #expect(resent.payload == onBReply.payload)
        // A new id does run: its pushes follow the first three.
        let fresh = try await onA.call("emit", emit, id: "e2")
        #expect(try object(fresh)["first_seq"] as? Int == 4)
        #expect(try await onA.push(topic: "t", within: .seconds(10)).seq == 4)

        serverA.send(SIGTERM)
        serverB.send(SIGTERM)
        #expect(try await serverA.waitForExit().status == 0)
        #expect(try await serverB.waitForExit().status == 0)
    }

    @Test(.timeLimit(.minutes(10)))
    func theFleetDemoCrashesTheClientsServerAndLosesNothing() async throws {
        let outcome = try await ToolProcess.run(
            ["demo", "--fleet", "3", "--duration", "10s", "--quiet"], within: .seconds(90))
        let output = outcome.standardOutput
        #expect(outcome.status == 0, "\(output) \(outcome.standardError)")
        #expect(summaryValue("lost", in: output) == "0", "\(output)")
        #expect(summaryValue("duplicates", in: output) == "0")
        #expect(summaryValue("executed twice", in: output) == "0")
        #expect(summaryValue("servers in the fleet", in: output) == "3")
        #expect(summaryValue("servers crashed / restarted", in: output)?.hasPrefix("0") == false)
        #expect(Int(summaryValue("alerts delivered", in: output) ?? "") ?? 0 > 0)
        #expect(Int(summaryValue("requests ok", in: output) ?? "") ?? 0 > 10)
    }

    @Test(.timeLimit(.minutes(10)))
    func theFleetSoakReportsNothingLostDuplicatedRunTwiceOrHung() async throws {
        let outcome = try await ToolProcess.run(
            ["soak", "--fleet", "3", "--duration", "20s", "--quiet"], within: .seconds(120))
        let output = outcome.standardOutput
        #expect(outcome.status == 0, "\(output) \(outcome.standardError)")
        for label in ["lost", "duplicated", "executed twice", "hung", "out of order", "left pending"] {
            #expect(summaryValue(label, in: output) == "0", "\(label) in \(output)")
        }
        #expect(summaryValue("result", in: output) == "PASS")
        #expect(Int(summaryValue("faults injected", in: output) ?? "") ?? 0 >= 3)
        #expect(Int(summaryValue("pushes emitted", in: output) ?? "") ?? 0 > 100)
        // Memory is printed when the baseline sample is taken (halfway through so short a run) and
        // in the summary, with the growth checked against its bound.
        #expect(output.contains("memory at 0m10s: RSS "), "\(output)")
        #expect(summaryValue("memory growth", in: output)?.hasSuffix("RSS (limit +16.0 MiB)") == true, "\(output)")
    }
}

@Suite("longlink fleet options", .sharedMachine)
struct FleetOptionTests {
    @Test func aBadRedisURLIsAUsageError() async throws {
        let outcome = try await ToolProcess.run(["serve", "--port", "0", "--redis", "http://127.0.0.1:6379"])
        #expect(outcome.status == ExitStatus.usage)
        #expect(outcome.standardError.contains("bad Redis URL"), "\(outcome.standardError)")
        #expect(outcome.standardOutput.isEmpty)
        let noPrefixAlone = try await ToolProcess.run(["serve", "--port", "0", "--redis-prefix", "x:"])
        #expect(noPrefixAlone.status == ExitStatus.usage)
        #expect(noPrefixAlone.standardError.contains("--redis-prefix needs --redis"))
    }

    @Test func redisOptionsParse() throws {
        func parse(_ arguments: [String]) throws -> ParsedArguments {
            try ArgumentParser.parse(["--port", "0"] + arguments, for: ServeCommand.spec)
        }
        #expect(try ServeCommand.redisConfiguration(parse([])) == nil)
        let configuration = try #require(
            try ServeCommand.redisConfiguration(parse(["--redis", "redis://10.0.0.7:6380/2", "--redis-prefix", "p:"])))
        #expect(configuration.host == "10.0.0.7")
        #expect(configuration.port == 6380)
        #expect(configuration.database == 2)
        #expect(configuration.keyPrefix == "p:")
        for bad in ["redis://", "redis://host:0", "redis://host:port", "redis://host/x"] {
            #expect(throws: UsageError.self, "\(bad)") { try ServeCommand.redisConfiguration(parse(["--redis", bad])) }
        }
    }

    @Test func theLauncherSaysWhichPackageIsMissing() async throws {
        #expect(LocalRedisServer.locate(environment: ["LONGLINK_REDIS_SERVER": "/nonexistent/redis-server"]) == nil)
        #expect(
            LocalRedisServer.locate(environment: ["PATH": "/nonexistent"])
                == LocalRedisServer.locate(
                    environment: ["PATH": ""]))
        await #expect(throws: LocalRedisServer.Missing.self) {
            _ = try await LocalRedisServer.start(binary: nil, freePort: { try await freePort() })
        }
        let message = "\(LocalRedisServer.Missing())"
        #expect(message.contains("Debian package redis-server"))
        #expect(!message.contains("\n"))
    }

    @Test func theFleetOptionsAreBounded() async throws {
        let demo = try await ToolProcess.run(["demo", "--fleet", "1"])
        #expect(demo.status == ExitStatus.usage)
        let soak = try await ToolProcess.run(["soak", "--fleet", "17"])
        #expect(soak.status == ExitStatus.usage)
    }
}

private func object(_ response: Frame.Response) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(response.payload)) as? [String: Any])
}
