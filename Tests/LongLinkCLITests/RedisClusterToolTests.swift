import Foundation
import LongLinkCLISupport
import LongLinkRedis
import LongLinkTestSupport
import Testing

@testable import longlink

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the tool's Redis Cluster runs start: as the other fleet tests (the cluster needs
/// redis-server only).
let clusterToolTestsEnabled: Bool = fleetToolTestsEnabled

/// `serve --redis-cluster` and `--redis-durability`: how they parse and how they fail.
@Suite("longlink serve --redis-cluster and --redis-durability", .sharedMachine)
struct RedisClusterOptionTests {
    private func parse(_ arguments: [String]) throws -> ParsedArguments {
        try ArgumentParser.parse(["--port", "0"] + arguments, for: ServeCommand.spec)
    }

    @Test func theSeedsComeFromTheOptionTheFileOrTheEnvironment() throws {
        let given = try ServeCommand.redis(
            parse([
                "--redis-cluster", "redis://:pw@10.0.0.1:7000, redis://10.0.0.2:7001", "--redis-prefix", "p:",
                "--redis-durability", "replicated:1",
            ]), environment: [:])
        guard case .cluster(let seeds)? = given else {
            Issue.record("not a cluster: \(String(describing: given))")
            return
        }
        #expect(seeds.map(\.port) == [7000, 7001] && seeds.map(\.host) == ["10.0.0.1", "10.0.0.2"])
        #expect(seeds.allSatisfy { $0.keyPrefix == "p:" && $0.durability == .replicated(1) })
        #expect(seeds[0].password == "pw")

        let environment = [ServeCommand.redisClusterURLVariable: "redis://10.0.0.3:7002"]
        guard case .cluster(let fromEnvironment)? = try ServeCommand.redis(parse([]), environment: environment) else {
            Issue.record("the environment's cluster was not read")
            return
        }
        #expect(fromEnvironment.map(\.port) == [7002] && fromEnvironment[0].durability == .asynchronous)

        let file = NSTemporaryDirectory() + "longlink-cluster-url-\(UUID().uuidString)"
        try "redis://10.0.0.4:7003,redis://10.0.0.5:7004\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        guard
            case .cluster(let fromFile)? = try ServeCommand.redis(
                parse(["--redis-cluster-url-file", file]), environment: environment)
        else {
            Issue.record("the file's cluster was not read")
            return
        }
        #expect(fromFile.map(\.port) == [7003, 7004])
        // The single Redis still parses as before, with the durability.
        guard
            case .single(let single)? = try ServeCommand.redis(
                parse(["--redis", "redis://10.0.0.6:6379", "--redis-durability", "asynchronous"]), environment: [:])
        else {
            Issue.record("--redis is not a single Redis")
            return
        }
        #expect(single.port == 6379 && single.durability == .asynchronous)
    }

    @Test func badClusterOptionsAreOneLineUsageErrorsWithoutThePassword() async throws {
        let secret = "pa55-\(UInt32.random(in: 0...UInt32.max))"
        let cases: [(arguments: [String], message: String)] = [
            (
                ["--redis", "redis://127.0.0.1:6379", "--redis-cluster", "redis://127.0.0.1:7000"],
                "--redis and --redis-cluster both name where the fleet's Redis is"
            ),
            (
                ["--redis-cluster", "redis://127.0.0.1:7000,http://app:\(secret)@127.0.0.1:7001"],
                "the Redis URL of --redis-cluster (URL 2 of 2): bad Redis URL"
            ),
            (["--redis-cluster", "redis://127.0.0.1:7000,"], "the Redis URL of --redis-cluster (URL 2 of 2): empty"),
            (
                ["--redis-cluster", "redis://:\(secret)@127.0.0.1:7000", "--redis-durability", "replicated:\(secret)"],
                "--redis-durability needs asynchronous or replicated:N"
            ),
            (
                ["--redis-cluster", "redis://127.0.0.1:7000", "--redis-durability", "replicated:0"],
                "not 'replicated:0'"
            ),
            (["--redis-durability", "replicated:1"], "--redis-durability needs --redis"),
        ]
        for (arguments, message) in cases {
            let outcome = try await ToolProcess.run(["serve", "--port", "0"] + arguments)
            #expect(outcome.status == ExitStatus.usage, "\(arguments): \(outcome.standardError)")
            let first = outcome.standardError.split(separator: "\n").first.map(String.init) ?? ""
            #expect(first.hasPrefix("longlink serve: ") && first.contains(message), "\(arguments): \(first)")
            #expect(!outcome.standardError.contains("@127.0.0.1"), "\(outcome.standardError)")
            #expect(outcome.standardOutput.isEmpty)
        }
    }

    @Test func theLogLineNamesTheSeedsAndTheDurabilityNotThePassword() async throws {
        let secret = "pa55-\(UInt32.random(in: 0...UInt32.max))"
        let server = try ToolProcess([
            "serve", "--port", "0", "--no-feed", "--redis-cluster",
            "redis://:\(secret)@127.0.0.1:1,redis://127.0.0.1:2", "--redis-durability", "replicated:1",
        ])
        defer { server.terminate() }
        try await server.waitForOutput(containing: Array("durability".utf8))
        let output = server.standardOutput
        let seeds = "a Redis Cluster of 2 seeds (redis://:***@127.0.0.1:1, redis://127.0.0.1:2)"
        #expect(output.contains(seeds), "\(output)")
        #expect(output.contains("durability replicated(1)"), "\(output)")
        #expect(!output.contains(secret) && !server.standardError.contains(secret))
    }

    @Test func demoAndSoakWantAFleetForACluster() async throws {
        for command in ["demo", "soak"] {
            let outcome = try await ToolProcess.run([command, "--redis-cluster"])
            #expect(outcome.status == ExitStatus.usage, "\(command): \(outcome.standardError)")
            #expect(outcome.standardError.hasPrefix("longlink \(command): --redis-cluster needs --fleet N"))
        }
    }

    @Test func clusterNodesLinesParse() {
        let text = """
            r4 127.0.0.1:30004@31004,host replica p1 0 1426238317239 4 connected
            p2 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
            p1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 [5461->-p2]
            p5 127.0.0.1:30005@31005 master,fail - 0 1426238316232 5 connected 10923 10924-16383
            garbage
            """
        let entries = ClusterNodesEntry.parse(text)
        #expect(entries.map(\.port) == [30004, 30002, 30001, 30005])
        #expect(entries[0].primaryID == "p1" && !entries[0].isPrimary)
        #expect(entries[2].isPrimary && entries[2].serves(0) && entries[2].serves(5460) && !entries[2].serves(5461))
        #expect(entries[3].failed && entries[3].serves(10923) && entries[3].serves(16383))
        #expect(!entries[1].failed && entries[1].primaryID == nil)
    }
}

// Serialized with nothing else heavy in it: six redis-servers, three servers and a client.
@Suite(
    "longlink soak --fleet --redis-cluster", .sharedMachine, .enabled(if: clusterToolTestsEnabled), .serialized)
struct RedisClusterToolTests {
    @Test(.timeLimit(.minutes(3)))
    func theClusterSoakKillsAPrimaryAndLosesNothing() async throws {
        let outcome = try await ToolProcess.run(
            ["soak", "--fleet", "3", "--redis-cluster", "--duration", "30s", "--quiet"], within: .seconds(150))
        let output = outcome.standardOutput
        for label in ["duplicated", "executed twice", "hung", "out of order", "left pending"] {
            #expect(summaryValue(label, in: output) == "0", "\(label) in \(output)")
        }
        #expect(summaryValue("lost", in: output) == "0", "lost in \(output)")
        #expect(summaryValue("result", in: output) == "PASS")
        #expect(outcome.status == 0, "\(output) \(outcome.standardError)")
        #expect(Int(summaryValue("primaries killed", in: output) ?? "") ?? 0 >= 1, "\(output)")
        #expect(Int(summaryValue("pushes emitted", in: output) ?? "") ?? 0 > 100)
    }

    @Test(.timeLimit(.minutes(2)))
    func aKilledPrimaryIsReplacedAndComesBackAsAReplica() async throws {
        let cluster = try await LocalRedisCluster.start()
        do {
            let failover = try await cluster.killPrimary(servingSlotOf: "{p:soak}")
            #expect(failover.killedPort != failover.promotedPort)
            #expect(Set(cluster.ports).count == 6 && cluster.ports.contains(failover.killedPort))
            // The new primary has the returned node as its replica: it can be failed over again.
            let again = try await cluster.killPrimary(servingSlotOf: "{p:soak}")
            #expect(again.killedPort == failover.promotedPort && again.promotedPort == failover.killedPort)
        } catch {
            await cluster.stop()
            throw error
        }
        let pids = cluster.processIdentifiers
        await cluster.stop()
        for pid in pids { #expect(kill(pid, 0) != 0, "redis-server \(pid) still runs") }
    }
}
