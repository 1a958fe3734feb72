import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLinkServer

/// `Sync` on a live server with a manual clock: one replay at a time, one begun per
/// `syncReplayInterval`, the `Sync`s in between coalesced.
///
/// "Nothing more was sent" is observed without waiting for a silence: a synchronous echo sent
/// afterwards is answered inline, in order on the connection, so any push the server sent first
/// arrives before its reply.
@Suite("Sync replays", .sharedMachine)
struct SyncReplayTests {
    private static func configuration(_ clock: ManualClock, window: Int = 8_192) -> ServerConfiguration {
        var configuration = ServerConfiguration.testing
        configuration.clock = clock
        configuration.reliablePushWindow = window
        configuration.reliablePushWindowTimeout = .seconds(3_600)
        return configuration
    }

    private func loggedIn(_ address: SocketAddress, as user: String) async throws -> FrameClient {
        let client = try await FrameClient.connect(to: address)
        _ = try await client.handshake(clientID: "\(user)-device")
        #expect(try await client.call("login", bytes(user), id: "login").text == "welcome")
        return client
    }

    private func syncs(_ count: Int) -> [Frame] {
        Array(repeating: .sync(Frame.Sync()), count: count)
    }

    @Test func syncsInALoopCostOneReplayPerInterval() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock)) { server, address in
            let client = try await loggedIn(address, as: "sam")
            for n in 1...5 { try await server.push(to: "sam", topic: "t", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3, 4, 5])
            // Twenty more at once: none replays before the interval has passed since the first.
            for frame in syncs(20) { try await client.send(frame) }
            #expect(try await client.seqsBeforeFence("f2") == [])
            await clock.advance(by: .milliseconds(999))
            #expect(try await client.seqsBeforeFence("f3") == [])
            // Then one replay for all twenty.
            await clock.advance(by: .milliseconds(1))
            #expect(try await client.seqsBeforeFence("f4") == [1, 2, 3, 4, 5])
            await clock.advance(by: .seconds(5))
            #expect(try await client.seqsBeforeFence("f5") == [])
            // Once the interval has passed, a Sync replays at once again.
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f6") == [1, 2, 3, 4, 5])
            #expect(server.statistics.reliablePushesSent == 15)
        }
    }

    /// A replay held back by a full window is still running: `Sync`s meanwhile start no other, and
    /// the one replay they wait for begins when it has caught up and the interval has passed.
    @Test func syncsWhileAReplayRunsStartNone() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock, window: 3)) { server, address in
            let client = try await loggedIn(address, as: "tess")
            for n in 1...7 { try await server.push(to: "tess", topic: "t", payload: [UInt8(n)]) }
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1, 2, 3])
            for frame in syncs(5) { try await client.send(frame) }
            #expect(try await client.seqsBeforeFence("f2") == [])
            // Well past the interval: the replay still runs (the window waits for an Ack).
            await clock.advance(by: .seconds(10))
            #expect(try await client.seqsBeforeFence("f3") == [])
            try await client.send(.ack(Frame.Ack(seqs: [1, 2, 3])))
            #expect(try await client.seqsBeforeFence("f4") == [4, 5, 6])
            try await client.send(.ack(Frame.Ack(seqs: [4, 5])))
            // 7 is the last: caught up, and the interval passed long ago, so the coalesced replay
            // follows at once, from the first unacknowledged push.
            #expect(try await client.seqsBeforeFence("f5") == [7, 6, 7])
            #expect(try await client.seqsBeforeFence("f6") == [])
        }
    }

    /// A store that counts its reads, answering at once as the server's own does (so that a fence
    /// shows what a `Sync` made it read): what a `Sync` costs a store.
    final class ReadCountingStore: ImmediatePushStore {
        let base = InMemoryPushStore()
        let reads = Atomic<Int>(0)

        func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush {
            try appendAtOnce(push)
        }

        func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
            unacknowledgedAtOnce(read)
        }

        func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
            acknowledgeAtOnce(acks)
        }

        func appendAtOnce(_ push: PushAppend) throws(LongLinkError) -> StoredPush {
            try base.append(push)
        }

        func unacknowledgedAtOnce(_ read: PushRead) -> [StoredPush] {
            reads.add(1, ordering: .relaxed)
            return base.unacknowledged(read)
        }

        func acknowledgeAtOnce(_ acks: AcknowledgedPushes) {
            base.acknowledge(acks)
        }

        func unacknowledgedCount(principal: String) -> Int {
            base.unacknowledgedCount(principal: principal)
        }
    }

    /// `Sync`s with nothing sent since the last replay began cost nothing: no read of the store.
    @Test func syncsOnAnEmptyBacklogReadNothing() async throws {
        let clock = ManualClock()
        let store = ReadCountingStore()
        let server = LongLinkServer(
            configuration: Self.configuration(clock), router: Probe().router(), stores: ServerStores(pushes: store))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let client = try await loggedIn(try await server.localAddress, as: "uma")
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [])
            let readsAfterFirst = store.reads.load(ordering: .relaxed)
            #expect(readsAfterFirst >= 1)
            for frame in syncs(20) { try await client.send(frame) }
            await clock.advance(by: .seconds(10))
            #expect(try await client.seqsBeforeFence("f2") == [])
            #expect(store.reads.load(ordering: .relaxed) == readsAfterFirst)
            // A live push goes out at once, as ever; a Sync after it replays it.
            try await server.push(to: "uma", topic: "t", payload: [1])
            // (Read, not fenced: the live push hops onto the loop on its own.)
            guard case .push(let live) = try await client.nextFrame() else {
                Issue.record("expected the live push")
                return
            }
            #expect(live.seq == 1)
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f3") == [1])
            server.shutdown()
            try await group.waitForAll()
        }
    }

    /// A new login starts afresh: its first `Sync` replays at once whatever the last one did.
    @Test func aNewPrincipalsFirstSyncReplaysAtOnce() async throws {
        let clock = ManualClock()
        try await withServer(Self.configuration(clock)) { server, address in
            let client = try await loggedIn(address, as: "vic")
            try await server.push(to: "vic", topic: "t", payload: [1])
            try await server.push(to: "wes", topic: "t", payload: [2])
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1") == [1])
            // A Sync of vic's waits for the interval...
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.seqsBeforeFence("f1b") == [])
            #expect(try await client.call("login", bytes("wes"), id: "login-2").text == "welcome")
            try await client.send(.sync(Frame.Sync()))
            // (The store numbers its pushes across principals.)
            #expect(try await client.seqsBeforeFence("f2") == [2])
            // ...and does not fire into wes's binding.
            await clock.advance(by: .seconds(5))
            #expect(try await client.seqsBeforeFence("f3") == [])
        }
    }
}
