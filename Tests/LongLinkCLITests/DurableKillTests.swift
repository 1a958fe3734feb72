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

    @Test func everyProducedPushArrivesOnceAndNoAnsweredRequestRunsTwice() async throws {
        let directory = try TemporaryDirectory("durable-kill")
        var server = try await ServeProcess.start(dataDirectory: directory.path)
        let client = DurableServe.client(port: server.port)
        let ledger = Locked(DurableServe.Ledger())
        // Subscribed before the client runs: nothing delivered is missed. Acknowledged at hand-over.
        let stream = client.pushes(topic: nil)
        let consumer = Task {
            for await push in stream where push.topic.hasPrefix("p.") {
                ledger.withLock { $0.delivered[push.topic, default: 0] += 1 }
            }
        }
        let running = Task { try await client.run() }
        let producer = Task {
            var index = 0
            while !Task.isCancelled {
                index += 1
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
        }
        do {
            for round in 1...Self.kills {
                let before = ledger.withLock { $0.produced.count }
                try await eventually("\(Self.producedPerRound) pushes produced in round \(round)", within: .seconds(30)) {
                    ledger.withLock { $0.produced.count } >= before + Self.producedPerRound
                }
                try await server.kill()
                server = try await server.restart(dataDirectory: directory.path)
            }
            producer.cancel()
            _ = await producer.result
            let produced = ledger.withLock { $0.produced }
            try await eventually("every produced push delivered", within: .seconds(30)) {
                ledger.withLock { state in produced.allSatisfy { state.delivered[$0] != nil } }
            }
            let (delivered, answered, failed) = ledger.withLock { ($0.delivered, $0.answered, $0.failedCalls) }
            let twice = delivered.filter { $0.value > 1 }.keys.sorted()
            #expect(twice.isEmpty, "delivered more than once: \(twice)")
            var runTwice: [String] = []
            for id in answered where try await DurableServe.runs(client, of: id) != 1 { runTwice.append(id) }
            #expect(runTwice.isEmpty, "answered requests that ran other than once: \(runTwice)")
            print(
                "durable kill -9 x\(Self.kills): produced \(produced.count), delivered \(delivered.count)"
                    + " (of them \(delivered.count - produced.count) whose emit did not return), failed calls \(failed),"
                    + " duplicated \(twice.count), answered count requests \(answered.count), run twice \(runTwice.count)")
        } catch {
            producer.cancel()
            client.shutdown()
            await server.stop()
            throw error
        }
        client.shutdown()
        _ = await running.result
        consumer.cancel()
        await server.stop()
    }
}
