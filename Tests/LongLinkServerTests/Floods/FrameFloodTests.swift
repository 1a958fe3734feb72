import LongLinkTestSupport
import Testing

/// Each inbound frame kind as a flood from raw sockets against a child `longlink serve` (the
/// default configuration, in memory), measured from outside: bytes the server sent per byte it
/// received, its CPU time and resident memory from `/proc`. The bounds are the documented ones
/// (Docs.docc/Limits.md, "Amplification"); the table is printed for it.
@Suite("Frame floods", .sharedMachine, .serialized)
struct FrameFloodTests {
    /// The documented bound of one flood.
    struct Bound {
        /// Bytes sent per byte received.
        var amplification: Double
        /// Server CPU per frame of the flood, in a debug build on a shared 2-core machine.
        var cpuPerFrame: Duration
        /// Resident memory the flood may leave grown.
        var residentGrowth: Int
    }

    /// Measured in a debug build on a shared 2-core machine: Hello 1.54 bytes out per byte in and
    /// 40 µs a frame, Request 1.29 and 7 µs, Ping 1.0 and 2 µs, GoAway 0.24, garbage 0.02; Cancel,
    /// Ack and Sync (empty backlog) send nothing. The CPU bounds leave a loaded machine (or a
    /// sanitizer) room; the byte bounds do not need it.
    static let bounds: [String: Bound] = [
        "Hello": Bound(amplification: 2, cpuPerFrame: .microseconds(1_000), residentGrowth: 16 << 20),
        "Request": Bound(amplification: 2, cpuPerFrame: .microseconds(200), residentGrowth: 32 << 20),
        "Cancel": Bound(amplification: 0.01, cpuPerFrame: .microseconds(50), residentGrowth: 16 << 20),
        "Ack": Bound(amplification: 0.01, cpuPerFrame: .microseconds(2_000), residentGrowth: 16 << 20),
        "Sync": Bound(amplification: 0.01, cpuPerFrame: .microseconds(50), residentGrowth: 16 << 20),
        "Ping": Bound(amplification: 1.5, cpuPerFrame: .microseconds(100), residentGrowth: 16 << 20),
        "GoAway": Bound(amplification: 1, cpuPerFrame: .microseconds(500), residentGrowth: 16 << 20),
        "garbage": Bound(amplification: 0.1, cpuPerFrame: .microseconds(500), residentGrowth: 16 << 20),
    ]

    @Test func eachFrameKindsFloodStaysWithinItsBound() async throws {
        let server = try await ServeProcess.start()
        defer { server.tool.terminate() }
        var rows: [FloodRow] = []
        for flood in Flood.all {
            let row = try await FloodRow.measure(flood, on: server)
            rows.append(row)
            let bound = try #require(Self.bounds[flood.kind])
            #expect(row.amplification <= bound.amplification, "\(flood.kind): \(row.amplification) bytes out per byte in")
            #expect(row.cpu <= bound.cpuPerFrame * flood.frames, "\(flood.kind): \(row.cpu) of CPU")
            #expect(row.residentGrowth <= bound.residentGrowth, "\(flood.kind): RSS grew \(row.residentGrowth >> 10) KiB")
        }
        print("Frame floods against one server (longlink serve, in memory):\n" + FloodRow.table(rows))
        await server.stop()
    }

    /// Issue #43's reproduction: 20 `Sync`s after the first replay of 10,000 unacknowledged
    /// pushes (256-byte topics) cost at most ``ReplayFlood/extraReplays`` more replays, not one
    /// each (18.2x the backlog before the `Sync` gate).
    @Test func syncsAfterTheFirstReplayCostAtMostTwoMoreReplays() async throws {
        let server = try await ServeProcess.start()
        defer { server.tool.terminate() }
        let replay = try await ReplayFlood.prepare(port: server.port, user: "replayed")
        defer { replay.client.close() }
        let before = try server.usage()
        let traffic = try await replay.syncAgain()
        let after = try server.usage()
        let replays = Double(traffic.received) / Double(replay.backlogBytes)
        print(
            "20 Syncs after a replay of \(ReplayFlood.pushes) pushes (\(replay.backlogBytes) bytes): "
                + "\(traffic.sent) bytes in, \(traffic.received) bytes out (\((replays * 100).rounded() / 100) backlogs), "
                + "CPU \((after.cpu - before.cpu).milliseconds) ms, RSS \((after.residentBytes - before.residentBytes) >> 10) KiB")
        #expect(traffic.received <= ReplayFlood.extraReplays * replay.backlogBytes + 4_096)
        await server.stop()
    }
}
