import LongLinkTestSupport
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLinkServer

/// An application's own ``PushStore`` (not an ``InMemoryPushStore``, so the server speaks to it
/// in tasks, as to a store on disk or a round trip away): `push(to:)`, the pump and the acks all
/// reach it, and it implements none of the fleet's part.
@Suite("A push store of the application's", .sharedMachine)
struct CustomPushStoreTests {
    /// The three requirements only: it keeps its pushes in an ``InMemoryPushStore`` and counts
    /// the acknowledgement calls that reach it.
    final class OwnStore: PushStore {
        let base = InMemoryPushStore()
        let acknowledgements = Atomic<Int>(0)

        func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush {
            try base.append(push)
        }

        func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
            base.unacknowledged(read)
        }

        func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
            acknowledgements.add(1, ordering: .relaxed)
            base.acknowledge(acks)
        }
    }

    @Test func pushAndAcksReachIt() async throws {
        let store = OwnStore()
        let server = LongLinkServer(
            configuration: .testing, router: Probe().router(), stores: ServerStores(pushes: store))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let client = try await FrameClient.connect(to: try await server.localAddress)
            _ = try await client.handshake(clientID: "gus-phone")
            #expect(try await client.call("login", bytes("gus"), id: "login").text == "welcome")
            try await client.send(.sync(Frame.Sync()))
            #expect(try await server.push(to: "gus", topic: "t", payload: [1]) == 1)
            #expect(try await server.push(to: "gus", topic: "t", payload: [2]) == 2)
            var seqs: [UInt64] = []
            while seqs.count < 2 {
                if case .push(let push) = try await client.nextFrame() { seqs.append(push.seq) }
            }
            #expect(seqs == [1, 2])
            try await client.send(.ack(Frame.Ack(seqs: seqs)))
            // The store is called in a task: its answer comes when it comes.
            try await eventually("the acks reach the store") { store.base.unacknowledgedCount(principal: "gus") == 0 }
            #expect(store.acknowledgements.load(ordering: .relaxed) == 1)
            server.shutdown()
            try await group.waitForAll()
        }
    }
}
