import LongLinkTestSupport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLinkServer

/// ``InMemoryPushStore`` through ``PushStore``, the one interface the server speaks to every
/// push store: append, read, acknowledge by epoch, observe.
@Suite("InMemoryPushStore as a PushStore", .sharedMachine)
struct InMemoryPushStoreTests {
    @Test func appendReadAndAcknowledgeByEpoch() async throws {
        let store: any PushStore = InMemoryPushStore(capacityPerPrincipal: 2)
        let first = try await store.append(PushAppend(principal: "ann", topic: "t", payload: [1]))
        let second = try await store.append(PushAppend(principal: "ann", topic: "t", payload: [2]))
        #expect([first.seq, second.seq] == [1, 2])
        #expect(first.epoch != 0 && second.epoch == first.epoch)
        await #expect(throws: LongLinkError.self) {
            _ = try await store.append(PushAppend(principal: "ann", topic: "t", payload: [3]))
        }

        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 0, limit: 10)).map(\.seq) == [1, 2])
        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 1, limit: 10)).map(\.payload) == [[2]])
        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 0, limit: 1)).map(\.seq) == [1])

        // An ack of another epoch names other pushes of the same numbers: nothing goes.
        try await store.acknowledge(AcknowledgedPushes(principal: "ann", seqs: [1], epoch: first.epoch &+ 1))
        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 0, limit: 10)).count == 2)
        try await store.acknowledge(AcknowledgedPushes(principal: "ann", seqs: [1], epoch: first.epoch))
        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 0, limit: 10)).map(\.seq) == [2])
        // Epoch 0: whatever the epoch.
        try await store.acknowledge(AcknowledgedPushes(principal: "ann", seqs: [2], epoch: 0))
        #expect(try await store.unacknowledged(PushRead(principal: "ann", after: 0, limit: 10)).isEmpty)
    }

    @Test func observersHearOfWatchedPushesAndLoginsUntilShutdown() async throws {
        let shared: any PushStore = InMemoryPushStore()
        let heard = Mutex<[String]>([])
        await shared.startObserving(
            PushStoreObserver(
                isWatching: { $0 == "ann" },
                pushStored: { principal in heard.withLock { $0.append("push \(principal)") } },
                noticesLost: { heard.withLock { $0.append("lost") } },
                sessionStarted: { principal, client in heard.withLock { $0.append("login \(principal) \(client)") } }
            ))
        // Reported on the caller's thread, before append returns: nothing to wait for.
        _ = try await shared.append(PushAppend(principal: "ann", topic: "t", payload: [1]))
        _ = try await shared.append(PushAppend(principal: "bob", topic: "t", payload: [1]))
        try await shared.announceSession(SessionAnnouncement(principal: "bob", clientID: "c1"))
        #expect(heard.withLock { $0 } == ["push ann", "login bob c1"])

        await shared.shutdown()
        _ = try await shared.append(PushAppend(principal: "ann", topic: "t", payload: [2]))
        #expect(heard.withLock { $0.count } == 2)
        // The pushes stay for a server started later with this store.
        #expect(try await shared.unacknowledged(PushRead(principal: "ann", after: 0, limit: 10)).count == 2)
    }
}
