import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// The frame floods of `FrameFloodTests` against a child `longlink serve --redis`, a fleet of one
/// on a Redis of the test's own, measured from outside as there, plus the Redis commands each
/// flood caused (`INFO commandstats`). The bounds are the documented ones (Docs.docc/Limits.md,
/// "Amplification").
@Suite("Frame floods on a fleet", .sharedMachine, .serialized, .enabled(if: RedisServerProcess.testsEnabled))
struct FleetFloodTests {
    /// The most Redis commands a flood may cause per frame, beyond those that come with time
    /// (``FloodRow/periodicRedisCommands``).
    static let redisPerFrame: [String: Double] = [
        // A Hello touches no store; the second one ends the connection.
        "Hello": 0.05,
        // A claim and a stored reply each (one script call, the commands it runs inside counted).
        "Request": 8,
        // 1,024 running handlers claimed in Redis; the refused ones touch nothing.
        "Request (refused)": 1,
        "Cancel": 0.001,
        // Acks of seqs this connection never sent cost the store nothing.
        "Ack": 0.05,
        // An empty backlog: the first Sync reads it once, the rest nothing.
        "Sync": 0.001,
        "Ping": 0.001,
        "GoAway": 0.01,
        "garbage": 0.01,
    ]

    /// What a flood's one session costs the fleet's presence whatever it sends: its login adds it
    /// and its end removes it, one script call each (`EVALSHA`, and inside `ZADD` or `ZREM`,
    /// `ZREMRANGEBYSCORE`, `PTTL`, `PEXPIRE`).
    static let presencePerSession: Double = 12

    /// Calls per command so far (`INFO commandstats`), commands run inside scripts included; the
    /// INFO calls themselves left out.
    static func commandCalls(_ redis: RedisServerProcess) async throws -> [String: Int] {
        let client = RedisClient(configuration: redis.configuration)
        defer { Task { await client.shutdown() } }
        let info = try await client.run(RedisCommand("INFO", "commandstats")).string ?? ""
        var calls: [String: Int] = [:]
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
            let name = line.dropFirst("cmdstat_".count).prefix { $0 != ":" }
            guard name != "info", name != "hello", name != "client",
                let field = line.split(separator: ",").first?.split(separator: "=").last,
                let count = Int(field)
            else { continue }
            calls[String(name)] = count
        }
        return calls
    }

    static func startServer(on redis: RedisServerProcess) async throws -> ServeProcess {
        try await ServeProcess.start(["--redis", "redis://127.0.0.1:\(redis.port)"])
    }

    @Test func eachFrameKindsFloodStaysWithinItsBoundOnAFleet() async throws {
        try await withRedisServer { redis in
            let server = try await Self.startServer(on: redis)
            defer { server.tool.terminate() }
            var rows: [FloodRow] = []
            for flood in Flood.all {
                let row = try await FloodRow.measure(flood, on: server) { try await Self.commandCalls(redis) }
                rows.append(row)
                let bound = try #require(Flood.bounds[flood.kind])
                #expect(row.amplification <= bound.amplification, "\(flood.kind): \(row.amplification) out per in")
                #expect(row.cpu <= bound.cpuPerFrame * flood.frames, "\(flood.kind): \(row.cpu) of CPU")
                #expect(
                    row.residentGrowth <= bound.residentGrowth, "\(flood.kind): RSS +\(row.residentGrowth >> 10) KiB")
                let commands = (row.redisCalls ?? [:]).filter { !FloodRow.periodicRedisCommands.contains($0.key) }
                    .values.reduce(0, +)
                let allowed = try #require(Self.redisPerFrame[flood.kind]) * Double(flood.frames)
                #expect(
                    Double(commands) <= max(allowed, 4) + Self.presencePerSession,
                    "\(flood.kind): \(commands) Redis commands")
            }
            print("Frame floods against a fleet of one (longlink serve --redis):\n" + FloodRow.table(rows))
            await server.stop()
        }
    }

    /// Issue #43's reproduction on a fleet: 20 `Sync`s, 50 ms apart (under a second), after the
    /// first replay of 10,000 unacknowledged pushes cost at most two more replays (⌊their spread
    /// / `syncReplayInterval`⌋ + 2), in bytes and in `XRANGE` calls (270 `XRANGE` and 6.4
    /// backlogs measured before the `Sync` gate).
    @Test func syncsAfterTheFirstReplayCostAtMostOneReplayOfXRANGEPerInterval() async throws {
        try await withRedisServer { redis in
            let server = try await Self.startServer(on: redis)
            defer { server.tool.terminate() }
            let replay = try await ReplayFlood.prepare(port: server.port, user: "replayed")
            defer { replay.client.close() }
            let before = try await Self.commandCalls(redis)
            let outcome = try await replay.syncAgain()
            let after = try await Self.commandCalls(redis)
            let xranges = after["xrange", default: 0] - before["xrange", default: 0]
            // A replay reads pages of at most 256 pushes, one more at each window of 8,192 it
            // fills, and one that finds the end.
            let perReplay = (ReplayFlood.pushes + 255) / 256 + (ReplayFlood.pushes + 8_191) / 8_192 + 1
            let replays = Double(outcome.traffic.received) / Double(replay.backlogBytes)
            print(
                "Fleet: 20 Syncs over \(outcome.spread.milliseconds) ms after a replay of \(ReplayFlood.pushes) pushes "
                    + "(\(replay.backlogBytes) bytes): \(outcome.traffic.received) bytes out "
                    + "(\((replays * 100).rounded() / 100) backlogs, at most \(outcome.replaysAllowed)), "
                    + "\(xranges) XRANGE (at most \(outcome.replaysAllowed * perReplay))")
            #expect(outcome.traffic.received <= outcome.replaysAllowed * replay.backlogBytes + 4_096)
            #expect(xranges <= outcome.replaysAllowed * perReplay)
            await server.stop()
        }
    }
}
