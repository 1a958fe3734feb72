import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLinkServer

/// An application's own ``PushStore`` (not a ``SharedPushStore``): the server wraps it in the one
/// interface, so `publish`, `push(to:)`, the pump and the acks all reach it.
@Suite("A push store of the application's", .sharedMachine)
struct CustomPushStoreTests {
    /// A synchronous store only: it keeps its pushes in an ``InMemoryPushStore`` and counts the
    /// acknowledgement calls that reach it.
    final class OwnStore: PushStore {
        let base = InMemoryPushStore()
        let acknowledgements = Atomic<Int>(0)

        func append(principal: String, topic: String, payload: [UInt8]) throws(LongLinkError) -> StoredPush {
            try base.append(principal: principal, topic: topic, payload: payload)
        }

        func unacknowledged(principal: String, after seq: UInt64, limit: Int) -> [StoredPush] {
            base.unacknowledged(principal: principal, after: seq, limit: limit)
        }

        func acknowledge(principal: String, seqs: [UInt64]) {
            acknowledgements.add(1, ordering: .relaxed)
            base.acknowledge(principal: principal, seqs: seqs)
        }

        func unacknowledgedCount(principal: String) -> Int {
            base.unacknowledgedCount(principal: principal)
        }
    }

    @Test func publishPushAndAcksReachIt() async throws {
        let store = OwnStore()
        let server = LongLinkServer(configuration: .testing, router: Probe().router(), pushStore: store)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let client = try await FrameClient.connect(to: try await server.localAddress)
            _ = try await client.handshake(clientID: "gus-phone")
            #expect(try await client.call("login", bytes("gus"), id: "login").text == "welcome")
            try await client.send(.sync(Frame.Sync()))
            #expect(try await server.publish(to: "gus", topic: "t", payload: [1]) == 1)
            #expect(try server.push(to: "gus", topic: "t", payload: [2]) == 2)
            var seqs: [UInt64] = []
            while seqs.count < 2 {
                if case .push(let push) = try await client.nextFrame() { seqs.append(push.seq) }
            }
            #expect(seqs == [1, 2])
            try await client.send(.ack(Frame.Ack(seqs: seqs)))
            #expect(try await client.call("echo", id: "fence").requestID == "fence")
            #expect(store.unacknowledgedCount(principal: "gus") == 0)
            #expect(store.acknowledgements.load(ordering: .relaxed) == 1)
            server.shutdown()
            try await group.waitForAll()
        }
    }
}
