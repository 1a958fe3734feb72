import LongLinkTestSupport
import Testing

/// Each inbound frame kind as a flood from raw sockets against a child `longlink serve` (the
/// default configuration, in memory), measured from outside: bytes the server sent per byte it
/// received, its CPU time and resident memory from `/proc`. The bounds are the documented ones
/// (Docs.docc/Limits.md, "Amplification"); the table is printed for it.
@Suite("Frame floods", .sharedMachine, .serialized)
struct FrameFloodTests {
    @Test func eachFrameKindsFloodStaysWithinItsBound() async throws {
        let server = try await ServeProcess.start()
        defer { server.tool.terminate() }
        var rows: [FloodRow] = []
        for flood in Flood.all {
            let row = try await FloodRow.measure(flood, on: server)
            rows.append(row)
            let bound = try #require(Flood.bounds[flood.kind])
            #expect(
                row.amplification <= bound.amplification, "\(flood.kind): \(row.amplification) bytes out per byte in")
            #expect(row.cpu <= bound.cpuPerFrame * flood.frames, "\(flood.kind): \(row.cpu) of CPU")
            #expect(
                row.residentGrowth <= bound.residentGrowth, "\(flood.kind): RSS grew \(row.residentGrowth >> 10) KiB")
        }
        print("Frame floods against one server (longlink serve, in memory):\n" + FloodRow.table(rows))
        await server.stop()
    }

    /// Issue #43's reproduction: 20 `Sync`s, 50 ms apart (under a second), after the first replay
    /// of 10,000 unacknowledged pushes (256-byte topics) cost at most two more replays
    /// (⌊their spread / `syncReplayInterval`⌋ + 2), not one each (17.7x the backlog measured
    /// before the `Sync` gate, 18.2x in the issue).
    @Test func syncsAfterTheFirstReplayCostAtMostOneReplayPerInterval() async throws {
        let server = try await ServeProcess.start()
        defer { server.tool.terminate() }
        let replay = try await ReplayFlood.prepare(port: server.port, user: "replayed")
        defer { replay.client.close() }
        let before = try server.usage()
        let outcome = try await replay.syncAgain()
        let after = try server.usage()
        let replays = Double(outcome.traffic.received) / Double(replay.backlogBytes)
        print(
            "20 Syncs over \(outcome.spread.milliseconds) ms after a replay of \(ReplayFlood.pushes) pushes "
                + "(\(replay.backlogBytes) bytes): \(outcome.traffic.sent) bytes in, \(outcome.traffic.received) bytes out "
                + "(\((replays * 100).rounded() / 100) backlogs, at most \(outcome.replaysAllowed)), "
                + "CPU \((after.cpu - before.cpu).milliseconds) ms, RSS \((after.residentBytes - before.residentBytes) >> 10) KiB"
        )
        #expect(outcome.traffic.received <= outcome.replaysAllowed * replay.backlogBytes + 4_096)
        await server.stop()
    }
}
