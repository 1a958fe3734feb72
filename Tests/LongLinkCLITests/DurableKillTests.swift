import LongLinkCore
import Foundation
import LongLink
import LongLinkTestSupport
import LongLinkTransport
import Testing

/// `longlink serve --data-dir` killed with SIGKILL under a steady producer, consumer and stream of
/// requests, and restarted on the same directory and port, 20 times in a row.
@Suite("longlink serve --data-dir: kill -9", .sharedMachine)
struct DurableKillTests {
    /// The kills in a row (`LONGLINK_DURABLE_KILLS` for a longer run).
    static let kills = ProcessInfo.processInfo.environment["LONGLINK_DURABLE_KILLS"].flatMap { Int($0) } ?? 20
    /// Pushes produced between two kills, at least.
    static let producedPerRound = 5

    /// Producer tasks at once.
    static let producers = 8

    /// One `emit` of push `p.index` and one run of `count`, recorded in `ledger` when answered.
    static func produce(_ client: LongLinkClient, index: Int, ledger: Locked<DurableServe.Ledger>) async {
        do {
            _ = try await DurableServe.emit(client, topic: "p.\(index)")
            ledger.withLock { _ = $0.produced.insert("p.\(index)") }
        } catch {
            ledger.withLock { $0.failedCalls += 1 }
        }
        // A run of `count`: its reply names the request id the client gave it.
        if let reply = try? await client.request("count", payload: Array("{}".utf8)),
            let id = (try? DurableServe.object(reply))?["request_id"] as? String
        {
            ledger.withLock { $0.answered.append(id) }
        }
    }

    /// A consumer: a client of its own (client id `consumer`, user alice) that takes every push
    /// and records it, acknowledged at hand-over.
    final class Consumer: Sendable {
        let client: LongLinkClient
        let running: Task<Void, any Error>
        let taking: Task<Void, Never>

        init(port: Int, ledger: Locked<DurableServe.Ledger>) {
            client = DurableServe.client(port: port, clientID: "consumer")
            // Subscribed before the client runs: nothing delivered is missed.
            let stream = client.pushes(topic: nil)
            taking = Task {
                for await push in stream where push.topic.hasPrefix("p.") {
                    ledger.withLock { $0.delivered[push.topic, default: 0] += 1 }
                }
            }
            let client = client
            running = Task { try await client.run() }
        }

        func stop() async {
            client.shutdown()
            _ = await running.result
            taking.cancel()
        }
    }

    @Test func everyProducedPushArrivesOnceAndNoAnsweredRequestRunsTwice() async throws {
        let directory = try TemporaryDirectory("durable-kill")
        // Each run of `count` is appended there by the server before its reply leaves: it
        // outlives every process (count's own tally is in memory and starts again at each).
        let runsLog = directory.appending("runs.log")
        var server = try await ServeProcess.start(dataDirectory: directory.path, ["--runs-log", runsLog])
        let ledger = Locked(DurableServe.Ledger())
        // The producer logs in as the consumer's user (emit pushes to the caller's principal) and
        // never takes a push: what the consumer does not acknowledge stays stored.
        let client = DurableServe.client(port: server.port, clientID: "producer")
        let running = Task { try await client.run() }
        let consumer = Consumer(port: server.port, ledger: ledger)
        // Several producers at once: at each kill some calls are in flight, run by the old process
        // and unanswered, and are resent to the new one.
        let producer = Task {
            await withTaskGroup(of: Void.self) { group in
                for lane in 0..<Self.producers {
                    group.addTask {
                        var index = lane
                        while !Task.isCancelled {
                            index += Self.producers
                            await Self.produce(client, index: index, ledger: ledger)
                        }
                    }
                }
            }
        }
        do {
            for round in 1...Self.kills {
                let before = ledger.withLock { $0.produced.count }
                try await eventually("\(Self.producedPerRound) pushes produced in round \(round)", within: .seconds(30))
                {
                    ledger.withLock { $0.produced.count } >= before + Self.producedPerRound
                }
                // From every odd kill to the next one the consumer is away (an app in the
                // background does not reconnect): what is produced meanwhile, and then killed,
                // reaches it only from the store of the process after.
                if round % 2 == 1 { consumer.client.appDidEnterBackground() }
                try await server.kill()
                server = try await server.restart(dataDirectory: directory.path, ["--runs-log", runsLog])
                if round % 2 == 0 { consumer.client.appWillEnterForeground() }
            }
            producer.cancel()
            _ = await producer.result
            let produced = ledger.withLock { $0.produced }
            // Not thrown: what is missing after the wait is reported below.
            try? await eventually("every produced push delivered", within: .seconds(20)) {
                ledger.withLock { state in produced.allSatisfy { state.delivered[$0] != nil } }
            }
            let (delivered, answered, failed) = ledger.withLock { ($0.delivered, $0.answered, $0.failedCalls) }
            let lost = produced.filter { delivered[$0] == nil }.sorted()
            #expect(lost.isEmpty, "produced, never delivered: \(lost.count) \(lost.prefix(20))")
            let twice = delivered.filter { $0.value > 1 }.keys.sorted()
            #expect(twice.isEmpty, "delivered more than once: \(twice)")
            var runTwice: [String] = []
            let runs = try DurableServe.runs(inLog: runsLog, clientID: "producer")
            for id in answered where runs[id] != 1 { runTwice.append(id) }
            #expect(runTwice.isEmpty, "answered requests that ran other than once: \(runTwice)")
            print(
                "durable kill -9 x\(Self.kills): produced \(produced.count), lost \(lost.count), delivered \(delivered.count)"
                    + " (of them \(delivered.keys.filter { !produced.contains($0) }.count) whose emit did not return), failed calls \(failed),"
                    + " duplicated \(twice.count), answered count requests \(answered.count), run twice \(runTwice.count)"
            )
        } catch {
            producer.cancel()
            client.shutdown()
            await consumer.stop()
            await server.stop()
            throw error
        }
        client.shutdown()
        _ = await running.result
        await consumer.stop()
        await server.stop()
    }
}
