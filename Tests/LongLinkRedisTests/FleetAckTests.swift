import LongLink
import LongLinkServer
import LongLinkTestSupport
import LongLinkTesting
import LongLinkWire
import Testing

@testable import LongLinkRedis

/// Acks in a fleet, sent by a raw client as LongLink's client never would: repeated by the
/// hundred thousand, or of an epoch Redis has since forgotten.
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct FleetAckTests {
    /// 200,000 `Ack{[1]}` after one push: Redis hears of the ack once, and another client's
    /// requests (each a claim and a finish in Redis) keep their quiet latency once the server has
    /// read them.
    @Test func aFloodOfRepeatedAcksCostsRedisAHandfulOfCallsAndOtherClientsNothing() async throws {
        try await withRedisServer { redis in
            // No presence renewal while Redis's command counts are compared (the default lease renews every 10 s).
            let fleet = try await RedisFleet.start(on: redis, count: 1, presenceLease: .seconds(3600))
            let server = try fleet.members[0].endpoint
            let acker = try await AckingClient.loggedIn(to: server, as: "flooder")
            _ = try await fleet.server(0).push(to: "flooder", topic: "alerts", payload: bytes("one"))
            let push = try await acker.nextPush()
            #expect(push.seq == 1)
            let flood = [Frame](repeating: .ack(Frame.Ack(seqs: [1], epoch: push.epoch)), count: 10_000)

            try await withLongLinkClient(configuration: .forRedisFleet([server], user: "quiet")) { other in
                for _ in 0..<50 { _ = try await other.request("server") }
                let quiet = try await p99(of: 400, other)

                let before = try await commandCalls(fleet.counter)
                for _ in 0..<20 { try await acker.send(flood) }
                try await acker.barrier(nonce: 1)
                try await eventually("the ack reaches Redis") { (try? await fleet.unacknowledged("flooder")) == 0 }
                let after = try await commandCalls(fleet.counter)
                // One script call, with the commands it runs inside. Commands that come with time,
                // not with acks, are left out: the session checks' TIME and GET and the claim
                // lease's SET each second, and this test's own XLENs while it waits.
                let periodic: Set = ["time", "get", "set", "xlen"]
                let scripts = after["evalsha", default: 0] - before["evalsha", default: 0]
                let added = after.filter { !periodic.contains($0.key) }
                    .map { (command: $0.key, calls: $0.value - before[$0.key, default: 0]) }.filter { $0.calls > 0 }
                let total = added.reduce(0) { $0 + $1.calls }
                print("200,000 Ack{[1]}: \(scripts) script calls, \(total) other Redis commands: \(added)")
                #expect(scripts <= 2)
                #expect(total <= 12)

                // Measured once the server has read 200,000 more: what they left queued on the
                // server's Redis connection (with one call each, seconds of scripts ahead of every
                // claim) is what other clients would wait behind. Reading them is the server's own
                // CPU, a few milliseconds a turn of its event loop, and is not measured here.
                for _ in 0..<20 { try await acker.send(flood) }
                try await acker.barrier(nonce: 2)
                let loaded = try await p99(of: 400, other)
                print("another client's p99: quiet \(quiet), after 200,000 more Ack{[1]} \(loaded)")
                // One script call per Ack queues seconds of scripts ahead of every claim; a loaded
                // 2-core machine's scheduling (or a sanitizer's) moves this p99 by tens of
                // milliseconds, and a full test run beside other work by hundreds. So: three times
                // the quiet p99, and never below a second (the fault queued seconds).
                #expect(loaded <= max(quiet * 3, .seconds(1)))
            }
            acker.close()
            await fleet.stop()
        }
    }

    /// Redis loses the principal (FLUSHALL) while the client holds pushes 1 to 3 of the old epoch;
    /// the new epoch numbers its pushes 1 to 3 again. The old epoch's acks, whether they reach the
    /// server before or after it sends the new pushes, delete none of them.
    @Test func acksInFlightAcrossARedisResetDoNotDeleteTheNewEpochsPushes() async throws {
        try await withRedisServer { redis in
            // No presence renewal while Redis's command counts are compared (the default lease renews every 10 s).
            let fleet = try await RedisFleet.start(on: redis, count: 1, presenceLease: .seconds(3600))
            let acker = try await AckingClient.loggedIn(to: try fleet.members[0].endpoint, as: "reset")
            for n in 1...3 {
                _ = try await fleet.server(0).push(to: "reset", topic: "alerts", payload: bytes("old \(n)"))
            }
            var old: [Frame.Push] = []
            for _ in 1...3 { old.append(try await acker.nextPush()) }
            #expect(old.map(\.seq) == [1, 2, 3])

            _ = try await fleet.counter.run(RedisCommand("FLUSHALL"))
            for n in 1...3 {
                _ = try await fleet.server(0).push(to: "reset", topic: "alerts", payload: bytes("new \(n)"))
            }
            #expect(try await fleet.unacknowledged("reset") == 3)

            // The server still numbers in the old epoch (it read nothing above seq 3): Redis refuses.
            try await acknowledge(acker, [1, 2, 3], epoch: old[0].epoch, nonce: 1, fleet: fleet)
            #expect(try await fleet.unacknowledged("reset") == 3)

            // After a Sync the server sends the new epoch: it ignores the old one's acks itself.
            try await acker.send([.sync(Frame.Sync())])
            var new: [Frame.Push] = []
            for _ in 1...3 { new.append(try await acker.nextPush()) }
            #expect(new.map(\.seq) == [1, 2, 3])
            #expect(new[0].epoch != old[0].epoch)
            try await acker.send([.ack(Frame.Ack(seqs: [1, 2, 3], epoch: old[0].epoch))])
            try await acknowledge(acker, [2], epoch: new[0].epoch, nonce: 2, fleet: fleet)
            #expect(try await fleet.unacknowledged("reset") == 2)
            acker.close()
            await fleet.stop()
        }
    }

    /// Sends an `Ack` and waits until Redis ran the acknowledge script it leads to.
    private func acknowledge(
        _ acker: AckingClient, _ seqs: [UInt64], epoch: UInt64, nonce: UInt64, fleet: RedisFleet
    ) async throws {
        let before = try await commandCalls(fleet.counter)["evalsha", default: 0]
        try await acker.send([.ack(Frame.Ack(seqs: seqs, epoch: epoch))])
        try await acker.barrier(nonce: nonce)
        try await eventually("the acknowledge script ran") {
            ((try? await commandCalls(fleet.counter))?["evalsha", default: 0] ?? 0) > before
        }
    }

    /// The 99th percentile of `count` sequential `server` requests' round trips.
    private func p99(of count: Int, _ client: LongLinkClient) async throws -> Duration {
        var times: [Duration] = []
        for _ in 0..<count {
            let start = ContinuousClock.now
            _ = try await client.request("server", options: RequestOptions(timeout: .seconds(10)))
            times.append(ContinuousClock.now - start)
        }
        times.sort()
        return times[(count * 99 + 99) / 100 - 1]
    }

    /// Calls per command so far (`INFO commandstats`), commands run inside scripts included; the
    /// INFO calls themselves left out.
    private func commandCalls(_ client: any RedisCommandRunner) async throws -> [String: Int] {
        let info = try await client.run(RedisCommand("INFO", "commandstats")).string ?? ""
        var calls: [String: Int] = [:]
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_") {
            let name = line.dropFirst("cmdstat_".count).prefix { $0 != ":" }
            guard name != "info", let field = line.split(separator: ",").first?.split(separator: "=").last,
                let count = Int(field)
            else { continue }
            calls[String(name)] = count
        }
        return calls
    }
}
