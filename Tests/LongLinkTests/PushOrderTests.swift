import LongLink
import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Testing

/// The order of reliable pushes when the client sends `Sync` on a link that is already receiving
/// them: what the server wrote before it read that `Sync` still arrives after it, ahead of the
/// redelivery. A scripted server replays exactly that interleaving, so each run is the same.
@Suite("Push order after a Sync on a busy link", .sharedMachine)
struct PushOrderTests {
    /// A server's store of one principal's reliable pushes, played by hand on the connection's
    /// event loop (every script call runs there).
    private final class Store: @unchecked Sendable {
        /// Seqs stored and not acknowledged.
        var unacknowledged: [UInt64]
        /// `Sync`s received so far.
        var syncs = 0

        init(_ seqs: ClosedRange<UInt64>) {
            unacknowledged = Array(seqs)
        }
    }

    private static func push(_ seq: UInt64) -> Frame {
        .push(Frame.Push(seq: seq, topic: "alerts", payload: Array("\(seq)".utf8), epoch: 7))
    }

    /// A server holding `stored` that sends `firstStream` after the first `Sync`; on the second it
    /// first sends `inFlight` (pushes it wrote before reading that `Sync`), then its redelivery:
    /// every unacknowledged seq from `redeliveryFrom` on, in order (lower ones count as acknowledged
    /// by another device meanwhile). Later `Sync`s get every unacknowledged seq. It answers `Ping`.
    private func server(
        stored: ClosedRange<UInt64>, firstStream: ClosedRange<UInt64>, inFlight: ClosedRange<UInt64>,
        redeliveryFrom: UInt64 = 1
    ) async throws -> ScriptedServer {
        let store = Store(stored)
        return try await ScriptedServer.start { frame, peer in
            switch frame {
            case .hello:
                peer.welcome()
            case .ping(let ping):
                peer.send(.pong(Frame.Pong(nonce: ping.nonce)))
            case .ack(let ack):
                store.unacknowledged.removeAll { ack.seqs.contains($0) }
            case .sync:
                store.syncs += 1
                switch store.syncs {
                case 1:
                    for seq in firstStream { peer.send(Self.push(seq)) }
                case 2:
                    for seq in inFlight { peer.send(Self.push(seq)) }
                    store.unacknowledged.removeAll { $0 < redeliveryFrom }
                    for seq in store.unacknowledged { peer.send(Self.push(seq)) }
                default:
                    for seq in store.unacknowledged { peer.send(Self.push(seq)) }
                }
            default:
                break
            }
        }
    }

    /// The seqs `stream` hands over up to `last`, within 20 s.
    private func seqs(upTo last: UInt64, from stream: AsyncStream<Push>) async throws -> [UInt64] {
        try await within(.seconds(20), "the pushes up to seq \(last)") {
            var seqs: [UInt64] = []
            for await push in stream {
                seqs.append(push.seq)
                if push.seq == last { break }
            }
            return seqs
        }
    }

    /// A consumer with room for 8 takes 1–8 and defers 9–31; once it
    /// catches up the client sends `Sync`, and 32–40 (sent before the server read it) arrive before
    /// the redelivery of 9–40. They must not be delivered ahead of 9–31.
    @Test func pushesSentBeforeTheServerReadTheSyncDoNotOvertakeTheDeferredOnes() async throws {
        let server = try await server(stored: 1...40, firstStream: 1...31, inFlight: 32...40)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.pushBufferLimit = 8
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        // Every one of 9–31 deferred before the consumer reads: the interleaving is fixed.
        try await eventually("seqs 9–31 deferred") {
            await running.client.statistics.reliablePushesDeferred == 23
        }
        let seen = try await seqs(upTo: 40, from: alerts)
        #expect(seen == Array(1...40))
        await running.stop()
        server.stop()
    }

    /// As above, but another device of the same principal acknowledged every seq up to 40 before
    /// the server read the `Sync`: its redelivery starts at 41, above everything the client saw, so
    /// nothing tells it from the older stream. The `Pong` to the `Ping` sent after the `Sync` ends
    /// the wait; what was dropped meanwhile comes with one more `Sync`, and nothing is stuck.
    @Test func aRedeliveryThatStartsAboveEverythingSeenIsNotLost() async throws {
        let server = try await server(stored: 1...45, firstStream: 1...31, inFlight: 32...40, redeliveryFrom: 41)
        var configuration = ClientConfiguration.forTests(server.endpoint)
        configuration.pushBufferLimit = 8
        let running = RunningClient(configuration)
        let alerts = running.client.pushes(topic: "alerts")
        try await eventually("seqs 9–31 deferred") {
            await running.client.statistics.reliablePushesDeferred == 23
        }
        let seen = try await seqs(upTo: 45, from: alerts)
        // 32–40 may or may not be delivered (another device took them), but never out of order.
        #expect(seen.starts(with: 1...8) && seen.reversed().starts(with: (41...45).reversed()))
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
        await running.stop()
        server.stop()
    }
}
