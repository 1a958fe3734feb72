import LongLinkTestSupport
import LongLinkTesting
import LongLinkTransport
import LongLinkWire
import Synchronization
import Testing

@testable import LongLinkServer

/// A server whose shared stores fail for a while (`unavailable`) before they answer: requests,
/// push reads and acks are made again. The retries' waits are of the tests' own (no test waits
/// for a real backoff), the push reads' by a manual clock.
@Suite("Store retries in the server: requests, reads and acks wait for a store briefly away", .sharedMachine)
struct StoreRetryServerTests {
    static let away = LongLinkError(code: .unavailable, message: "the store is failing over")

    /// Fails each kind of call with `away` as many times as told, then answers as a store where
    /// every request is claimed here; copies of request ids in `joined` find it running elsewhere
    /// and get `reply` when they wait.
    final class FlakyDedupe: DedupeStore {
        let beginFailures: Atomic<Int>
        let waitFailures: Atomic<Int>
        let begins = Atomic<Int>(0)
        let waits = Atomic<Int>(0)
        let joined: Set<String>
        let reply: [UInt8]

        init(beginFailures: Int, waitFailures: Int = 0, joined: Set<String> = [], reply: [UInt8] = []) {
            self.beginFailures = Atomic(beginFailures)
            self.waitFailures = Atomic(waitFailures)
            self.joined = joined
            self.reply = reply
        }

        func begin(_ claim: DedupeClaimRequest) async throws(LongLinkError) -> DedupeClaim {
            begins.add(1, ordering: .relaxed)
            // The login is not de-duplicated (no principal yet); only the tests' requests reach here.
            if beginFailures.subtract(1, ordering: .relaxed).oldValue > 0 { throw StoreRetryServerTests.away }
            return joined.contains(claim.requestID) ? .running : .run
        }

        func finish(_ reply: DedupeFinishRequest) async throws(LongLinkError) -> Bool { true }

        func abandon(_ request: DedupeAbandonRequest) async throws(LongLinkError) -> Bool { true }

        func awaitOutcome(_ wait: DedupeWaitRequest) async throws(LongLinkError) -> DedupeClaim {
            waits.add(1, ordering: .relaxed)
            if waitFailures.subtract(1, ordering: .relaxed).oldValue > 0 { throw StoreRetryServerTests.away }
            return .finished(reply)
        }

        func shutdown() async {}
    }

    /// An ``InMemoryPushStore`` whose reads and deletions fail with `away` as many times as told.
    final class FlakyPushes: PushStore {
        let base = InMemoryPushStore()
        let readFailures: Atomic<Int>
        let ackFailures: Atomic<Int>
        let reads = Atomic<Int>(0)
        let acks = Atomic<Int>(0)

        init(readFailures: Int = 0, ackFailures: Int = 0) {
            self.readFailures = Atomic(readFailures)
            self.ackFailures = Atomic(ackFailures)
        }

        var shared: any PushStore { base }

        func append(_ push: PushAppend) async throws(LongLinkError) -> StoredPush {
            try await shared.append(push)
        }

        func unacknowledged(_ read: PushRead) async throws(LongLinkError) -> [StoredPush] {
            reads.add(1, ordering: .relaxed)
            if readFailures.subtract(1, ordering: .relaxed).oldValue > 0 { throw StoreRetryServerTests.away }
            return try await shared.unacknowledged(read)
        }

        func acknowledge(_ acks: AcknowledgedPushes) async throws(LongLinkError) {
            self.acks.add(1, ordering: .relaxed)
            if ackFailures.subtract(1, ordering: .relaxed).oldValue > 0 { throw StoreRetryServerTests.away }
            try await shared.acknowledge(acks)
        }

        func startObserving(_ observer: PushStoreObserver) async { await shared.startObserving(observer) }
        func refreshObservation(of principal: String) async { await shared.refreshObservation(of: principal) }
        func announceSession(_ session: SessionAnnouncement) async throws(LongLinkError) {
            try await shared.announceSession(session)
        }
        func shutdown() async { await shared.shutdown() }
    }

    /// Runs a server of a fleet on `pushes` and `dedupe` whose store retries wait no real time,
    /// with a client `c1` logged in as alice.
    private func withServer(
        pushes: FlakyPushes = FlakyPushes(), dedupe: FlakyDedupe?, clock: ManualClock? = nil,
        _ body: (LongLinkServer, FrameClient, Probe) async throws -> Void
    ) async throws {
        var configuration = ServerConfiguration.testing
        if let clock { configuration.clock = clock }
        let probe = Probe()
        let server = LongLinkServer(
            configuration: configuration, router: probe.router(), stores: ServerStores(pushes: pushes, dedupe: dedupe))
        server.core.storeRetry.withLock { $0.timing = StoreRetryTests.VirtualTime().timing }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let client = try await FrameClient.loggedIn(try await server.localAddress, clientID: "c1")
            try await body(server, client, probe)
            client.close()
            server.shutdown()
            try await group.waitForAll()
        }
    }

    @Test func aClaimThatFailsForAWhileIsMadeAgainAndTheRequestRunsOnce() async throws {
        let dedupe = FlakyDedupe(beginFailures: 3)
        try await withServer(dedupe: dedupe) { server, client, probe in
            let reply = try await client.call("count", bytes("x"), id: "1", timeoutMilliseconds: 10_000)
            #expect(reply.status == nil && reply.text == "execution 1x", "\(reply)")
            #expect(dedupe.begins.load(ordering: .relaxed) == 4)
            #expect(probe.executions.load(ordering: .relaxed) == 1)
            #expect(server.statistics.storeCallsRetried == 3 && server.statistics.sharedStoreFailures == 0)
        }
    }

    @Test func aWaitThatFailsForAWhileIsMadeAgainAndGetsTheReply() async throws {
        let stored = SharedReply.encode(Frame.Response(payload: bytes("from s2")), method: "count")
        let dedupe = FlakyDedupe(beginFailures: 1, waitFailures: 2, joined: ["1"], reply: stored)
        try await withServer(dedupe: dedupe) { server, client, probe in
            let reply = try await client.call("count", bytes("x"), id: "1", timeoutMilliseconds: 10_000)
            #expect(reply.status == nil && reply.text == "from s2", "\(reply)")
            #expect(dedupe.waits.load(ordering: .relaxed) == 3)
            #expect(probe.executions.load(ordering: .relaxed) == 0)
            #expect(server.statistics.storeCallsRetried == 3)
        }
    }

    /// The store never answers within the deadline: the request is answered `UNAVAILABLE`, says
    /// so, and does not run.
    @Test func aStoreAwayPastTheDeadlineFailsTheRequestUnavailableWithoutRunningIt() async throws {
        let dedupe = FlakyDedupe(beginFailures: .max)
        try await withServer(dedupe: dedupe) { server, client, probe in
            let reply = try await client.call("count", bytes("x"), id: "1", timeoutMilliseconds: 2_000)
            #expect(reply.status?.code == .unavailable, "\(reply)")
            #expect(reply.status?.message.contains("before the request's deadline") == true, "\(reply)")
            #expect(probe.executions.load(ordering: .relaxed) == 0)
            #expect(dedupe.begins.load(ordering: .relaxed) > 1)
            #expect(server.statistics.sharedStoreFailures == 1)
        }
    }

    /// A read of the push store that fails for a while is made again after 50, 100, 200, then
    /// 400 ms by the server's clock, not after a real second each: the push arrives long before
    /// the 4 s those would take. Each turn moves the clock past any of those waits and gives the
    /// read 100 ms of real time (a turn whose read was slower fires its retry in the next).
    @Test func aPushReadThatFailsForAWhileIsMadeAgainSoon() async throws {
        let clock = ManualClock()
        let pushes = FlakyPushes(readFailures: 4)
        try await withServer(pushes: pushes, dedupe: nil, clock: clock) { server, client, _ in
            _ = try await pushes.append(PushAppend(principal: "alice", topic: "t", payload: [1]))
            try await client.send(.sync(Frame.Sync()))
            var push: Frame.Push?
            for _ in 0..<25 where push == nil {
                await clock.advance(by: .milliseconds(400))
                push = try? await client.push(topic: "t", within: .milliseconds(100))
            }
            #expect(push?.seq == 1)
            #expect(pushes.reads.load(ordering: .relaxed) >= 5)
            #expect(server.statistics.storeCallsRetried > 0)
        }
    }

    /// A deletion of acknowledged pushes that fails for a while is made again: the push leaves the
    /// store without another `Sync`.
    @Test func anAckThatFailsForAWhileIsMadeAgain() async throws {
        let pushes = FlakyPushes(ackFailures: 2)
        try await withServer(pushes: pushes, dedupe: nil) { server, client, _ in
            _ = try await pushes.append(PushAppend(principal: "alice", topic: "t", payload: [1]))
            try await client.send(.sync(Frame.Sync()))
            #expect(try await client.push(topic: "t").seq == 1)
            try await client.send(.ack(Frame.Ack(seqs: [1])))
            try await eventually("the ack stored") { pushes.base.unacknowledgedCount(principal: "alice") == 0 }
            #expect(pushes.acks.load(ordering: .relaxed) == 3)
            #expect(server.statistics.storeCallsRetried == 2)
        }
    }
}
