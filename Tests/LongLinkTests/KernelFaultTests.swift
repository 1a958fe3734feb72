import Foundation
import LongLink
import LongLinkCLISupport
import LongLinkServer
import LongLinkTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Whether real kernel faults can be injected: root, iptables, and an explicit opt-in, because the
/// rules must be made in a network namespace of the test run's own (`.ci/run` starts one with
/// `unshare --net` and sets `LONGLINK_KERNEL_FAULTS=1`).
enum KernelFaults {
    static var available: Bool {
        #if os(Linux)
            ProcessInfo.processInfo.environment["LONGLINK_KERNEL_FAULTS"] == "1" && geteuid() == 0
                && FileManager.default.isExecutableFile(atPath: iptablesPath)
        #else
            false
        #endif
    }

    static let iptablesPath = "/usr/sbin/iptables"

    static let skipReason: Comment =
        "kernel faults need root and iptables inside a network namespace: run .ci/run, or unshare --net --pid --fork --kill-child --mount-proc, ip link set lo up, LONGLINK_KERNEL_FAULTS=1 swift test --filter KernelFaultTests"

    /// Runs iptables with `arguments`; throws when it fails.
    static func iptables(_ arguments: [String]) throws {
        let process = try ChildProcess(iptablesPath, arguments: arguments)
        guard process.waitUntilExit() == 0 else {
            throw LongLinkError(code: .ioFailure, message: "iptables \(arguments.joined(separator: " ")) failed")
        }
    }

    /// Rules that drop packets to and from `port` (both directions cross INPUT on loopback).
    static func dropRules(port: Int, extra: [String] = []) -> [[String]] {
        [
            ["INPUT", "-p", "tcp", "--dport", "\(port)"] + extra + ["-j", "DROP"],
            ["INPUT", "-p", "tcp", "--sport", "\(port)"] + extra + ["-j", "DROP"],
        ]
    }

    /// Packets dropped by the INPUT chain's DROP rules so far.
    static func droppedPackets() throws -> Int {
        let process = try ChildProcess(
            iptablesPath, arguments: ["-L", "INPUT", "-v", "-x", "-n"], standardOutput: .pipe)
        let output = String(decoding: process.standardOutput!.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return output.split(separator: "\n").filter { $0.contains("DROP") }.compactMap {
            Int($0.split(separator: " ", omittingEmptySubsequences: true).first ?? "")
        }.reduce(0, +)
    }

    static func add(_ rules: [[String]]) throws {
        for rule in rules { try iptables(["-A"] + rule) }
    }

    static func remove(_ rules: [[String]]) {
        for rule in rules { try? iptables(["-D"] + rule) }
    }
}

@Suite(
    "Kernel faults (network namespace, iptables)", .sharedMachine,
    .enabled(if: KernelFaults.available, KernelFaults.skipReason))
struct KernelFaultTests {
    /// DROP rules on the server's port: both sockets stay ESTABLISHED with no FIN and no RST. Only
    /// the heartbeat can tell the link is dead.
    @Test func aKernelBlackHoleIsDetectedByTheHeartbeatAndTheClientComesBack() async throws {
        let probe = Probe()
        var serverConfiguration = ServerConfiguration.testing
        serverConfiguration.minimumHeartbeat = .milliseconds(50)
        let server = try await RunningServer.start(serverConfiguration, probe: probe)
        let port = server.address.port ?? 0
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.heartbeat = .milliseconds(300)
        configuration.connectTimeout = .milliseconds(500)
        // Logged in: the server de-duplicates only what a login preceded.
        configuration.login = { session in _ = try await session.request("login", payload: bytes("ada")) }
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        #expect(try await client.request("echo", payload: bytes("before")) == bytes("before"))

        let rules = KernelFaults.dropRules(port: port)
        try KernelFaults.add(rules)
        let pending = Task {
            try await client.request(
                "echo", payload: bytes("across the hole"), options: RequestOptions(timeout: .seconds(20)))
        }
        try await eventually("the half-open link is declared dead", within: .seconds(10)) {
            await client.statistics.deadLinks >= 1
        }
        KernelFaults.remove(rules)
        // The request written into the hole is resent on the new link (the server de-duplicates it).
        #expect(try await pending.value == bytes("across the hole"))
        #expect(try await client.request("echo", payload: bytes("after")) == bytes("after"))
        await running.stop()
        try await server.stop()
    }

    /// 20% of packets dropped at random in both directions: TCP retransmits, every request completes.
    @Test func randomPacketLossSlowsRequestsButLosesNone() async throws {
        let probe = Probe()
        let server = try await RunningServer.start(probe: probe)
        let port = server.address.port ?? 0
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.heartbeat = .seconds(5)
        configuration.defaultTimeout = .seconds(30)
        let running = RunningClient(configuration)
        try await running.waitUntilConnected()
        let client = running.client
        let rules = KernelFaults.dropRules(
            port: port, extra: ["-m", "statistic", "--mode", "random", "--probability", "0.2"])
        try KernelFaults.add(rules)
        defer { KernelFaults.remove(rules) }
        // One after another, so that many packets cross the lossy link.
        var good = 0
        for n in 0..<40 where try await client.request("echo", payload: bytes("n\(n)")) == bytes("n\(n)") {
            good += 1
        }
        #expect(good == 40)
        // The loss was real: the kernel dropped packets on the way.
        #expect(try KernelFaults.droppedPackets() > 0)
        KernelFaults.remove(rules)
        await running.stop()
        try await server.stop()
    }
}
