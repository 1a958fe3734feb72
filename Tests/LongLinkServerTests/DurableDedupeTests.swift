import LongLinkTestSupport
import Testing

@testable import LongLinkServer

/// The durable store's de-dup window, on real SQLite files: claims, replies, budgets, expiry, and
/// what a reopen finds.
@Suite("Durable store: de-dup window", .timeLimit(.minutes(2)))
struct DurableDedupeTests {
    private func key(_ request: String, client: String = "c1", principal: String? = "ann") -> DurableRequestKey {
        DurableRequestKey(principal: principal, clientID: client, requestID: request)
    }

    @Test func aRequestIsClaimedOnceAndItsReplyReplayed() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        #expect(try await engine.claim(key("1"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await engine.claim(key("1"), term: .seconds(5), window: .seconds(60)) == .running)
        #expect(try await engine.finish(key("1"), reply: bytes("done"), window: .seconds(60)) == .stored)
        #expect(try await engine.claim(key("1"), term: .seconds(5), window: .seconds(60)) == .finished(bytes("done")))
        // The same request id of another client, or of another principal, is another request.
        #expect(try await engine.claim(key("1", client: "c2"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await engine.claim(key("1", principal: "bo"), term: .seconds(5), window: .seconds(60)) == .run)
        // Given up: a copy runs it; a finish of a claim no longer held stores nothing.
        #expect(try await engine.abandon(key("1", client: "c2")))
        #expect(try await engine.abandon(key("1", client: "c2")) == false)
        #expect(try await engine.finish(key("1", client: "c2"), reply: bytes("x"), window: .seconds(60)) == .notClaimed)
        #expect(try await engine.claim(key("1", client: "c2"), term: .seconds(5), window: .seconds(60)) == .run)
        await engine.close()
    }

    @Test func repliesOutliveAReopenAndRunningClaimsBecomeUnknown() async throws {
        let directory = try TemporaryDirectory("durable")
        let clock = TestWallClock()
        var engine = try DurableEngine.open(directory, clock: clock)
        #expect(try await engine.claim(key("answered"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await engine.finish(key("answered"), reply: bytes("r"), window: .seconds(60)) == .stored)
        #expect(try await engine.claim(key("running"), term: .seconds(5), window: .seconds(60)) == .run)
        await engine.close()

        // Later than the claim's term: the mark lasts a window from the reopen all the same.
        clock.advance(by: .seconds(30))
        engine = try DurableEngine.open(directory, clock: clock)
        #expect(engine.statistics.withLock { $0.claimsUnknownOnOpen } == 1)
        #expect(
            try await engine.claim(key("answered"), term: .seconds(5), window: .seconds(60)) == .finished(bytes("r")))
        #expect(try await engine.claim(key("running"), term: .seconds(5), window: .seconds(60)) == .unknown)
        #expect(try await engine.finish(key("running"), reply: bytes("late"), window: .seconds(60)) == .notClaimed)
        clock.advance(by: .seconds(59))
        #expect(try await engine.claim(key("running"), term: .seconds(5), window: .seconds(60)) == .unknown)
        clock.advance(by: .seconds(2))
        #expect(try await engine.claim(key("running"), term: .seconds(5), window: .seconds(60)) == .run)
        await engine.close()
    }

    @Test func expiredEntriesAreRemovedAndTheirRequestsRunAgain() async throws {
        let directory = try TemporaryDirectory("durable")
        let clock = TestWallClock()
        let engine = try DurableEngine.open(directory, clock: clock)
        for n in 1...5 {
            #expect(try await engine.claim(key("\(n)"), term: .seconds(5), window: .seconds(10)) == .run)
            #expect(try await engine.finish(key("\(n)"), reply: bytes("r\(n)"), window: .seconds(10)) == .stored)
        }
        clock.advance(by: .seconds(11))
        // The next write's turn sweeps every expired entry, and their sums with them.
        #expect(try await engine.claim(key("6"), term: .seconds(5), window: .seconds(10)) == .run)
        #expect(engine.statistics.withLock { $0.expiredEntriesRemoved } == 5)
        #expect(try await engine.integer("SELECT count(*) FROM replies") == 1)
        #expect(try await engine.integer("SELECT entries FROM usage WHERE level = 0") == 1)
        #expect(try await engine.claim(key("1"), term: .seconds(5), window: .seconds(10)) == .run)
        await engine.close()
    }

    /// Which of `ids` of `client` of ann the file holds (without claiming them).
    private func held(_ engine: DurableEngine, _ client: String, _ ids: some Sequence<Int>) async throws -> [Int] {
        var held: [Int] = []
        for id in ids {
            let count = try await engine.integer(
                "SELECT count(*) FROM replies WHERE principal = CAST('pann' AS BLOB)"
                    + " AND client_id = CAST('\(client)' AS BLOB) AND request_id = CAST('\(id)' AS BLOB)")
            if count == 1 { held.append(id) }
        }
        return held
    }

    /// Claims and stores `reply` for `id` of `client` of ann, a second later than the last.
    private func run(_ engine: DurableEngine, _ clock: TestWallClock, _ client: String, _ id: Int, _ reply: [UInt8])
        async throws
    {
        clock.advance(by: .seconds(1))
        #expect(try await engine.claim(key("\(id)", client: client), term: .seconds(5), window: .seconds(600)) == .run)
        #expect(try await engine.finish(key("\(id)", client: client), reply: reply, window: .seconds(600)) == .stored)
    }

    /// Entries per client: a client whose entries all run is refused, with a hint, and gives up
    /// nothing; once one finished, its next claim runs and gives that one up (its own oldest
    /// finished), never a running claim.
    @Test func aClientWhoseEntriesAllRunIsRefusedAndGivesUpItsOwnFinishedOnes() async throws {
        let directory = try TemporaryDirectory("durable")
        let clock = TestWallClock()
        var configuration = DurableStoreConfiguration()
        configuration.budgets.dedupeCapacityPerClient = 2
        let engine = try DurableEngine.open(directory, configuration, clock: clock)
        #expect(try await engine.claim(key("1"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await engine.claim(key("2"), term: .seconds(5), window: .seconds(60)) == .run)
        guard case .refused(let refusal) = try await engine.claim(key("3"), term: .seconds(5), window: .seconds(60))
        else {
            Issue.record("the client's bound did not refuse")
            return
        }
        #expect(refusal.scope == .clientEntries && refusal.retryAfter > .zero)
        #expect(try await held(engine, "c1", 1...3) == [1, 2])
        #expect(try await engine.finish(key("1"), reply: bytes("r"), window: .seconds(60)) == .stored)
        #expect(try await engine.claim(key("3"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await held(engine, "c1", 1...3) == [2, 3])
        #expect(try await engine.claim(key("2"), term: .seconds(5), window: .seconds(60)) == .running)
        await engine.close()
    }

    /// Two entries per client, three per principal: c1 makes 20 requests and every one runs, c1
    /// giving up its own oldest replies; its newest replay, and c2's reply is untouched (at the
    /// principal's bound). A flood of new client ids, with nothing of their own to give up, is
    /// refused at the principal's bound.
    @Test func aClientOverItsEntriesGivesUpItsOwnOldestRepliesAndNoOneElses() async throws {
        let directory = try TemporaryDirectory("durable")
        let clock = TestWallClock()
        var configuration = DurableStoreConfiguration()
        configuration.budgets.dedupeCapacityPerClient = 2
        configuration.budgets.dedupeCapacityPerPrincipal = 3
        let engine = try DurableEngine.open(directory, configuration, clock: clock)
        for id in 1...20 { try await run(engine, clock, "c1", id, bytes("r\(id)")) }
        #expect(try await held(engine, "c1", 1...20) == [19, 20])
        try await run(engine, clock, "c2", 1, bytes("c2"))
        for id in 21...30 { try await run(engine, clock, "c1", id, bytes("r\(id)")) }
        #expect(try await held(engine, "c1", 1...30) == [29, 30])
        #expect(try await engine.claim(key("30"), term: .seconds(5), window: .seconds(60)) == .finished(bytes("r30")))
        #expect(
            try await engine.claim(key("1", client: "c2"), term: .seconds(5), window: .seconds(60))
                == .finished(bytes("c2")))
        for flood in 0..<10 {
            guard
                case .refused(let refusal) = try await engine.claim(
                    key("1", client: "flood-\(flood)"), term: .seconds(5), window: .seconds(60))
            else {
                Issue.record("flood-\(flood) was not refused")
                continue
            }
            #expect(refusal.scope == .principalEntries)
        }
        #expect(try await held(engine, "c2", 1...1) == [1])
        #expect(try await engine.integer("SELECT entries FROM usage WHERE level = 1") == 3)
        await engine.close()
    }

    /// 300 bytes per client, 400 per principal: c1's replies of 100 bytes are all kept, c1 giving
    /// up its own oldest ones at the client's bound; then c2's are, c2 giving up its own at the
    /// principal's bound (fewer), and c1's replies are untouched; the sums match the entries.
    @Test func aClientOverItsBytesGivesUpItsOwnOldestReplies() async throws {
        let directory = try TemporaryDirectory("durable")
        let clock = TestWallClock()
        var configuration = DurableStoreConfiguration()
        configuration.budgets.dedupeBytesPerClient = 300
        configuration.budgets.dedupeBytesPerPrincipal = 400
        let engine = try DurableEngine.open(directory, configuration, clock: clock)
        let reply = [UInt8](repeating: 7, count: 100)
        // Each entry is charged its names (7 or 8 bytes) and its reply: two fit in 300 bytes.
        for id in 1...10 { try await run(engine, clock, "c1", id, reply) }
        #expect(try await held(engine, "c1", 1...10) == [9, 10])
        #expect(try await engine.claim(key("10"), term: .seconds(5), window: .seconds(60)) == .finished(reply))
        // 400 less c1's 216: one of c2's.
        for id in 1...10 { try await run(engine, clock, "c2", id, reply) }
        #expect(try await held(engine, "c2", 1...10) == [10])
        #expect(try await held(engine, "c1", 1...10) == [9, 10])
        #expect(
            try await engine.claim(key("10", client: "c2"), term: .seconds(5), window: .seconds(60)) == .finished(reply))
        #expect(
            try await engine.integer("SELECT bytes FROM usage WHERE level = 1")
                == engine.integer("SELECT sum(charge) FROM replies"))
        await engine.close()
    }

    /// Bytes: a reply over the client's byte budget leaves a "not kept" mark, which its copies
    /// find; the budget in all refuses claims of every tenant alike.
    @Test func aReplyOverTheByteBudgetIsNotKeptAndTheBudgetInAllHolds() async throws {
        let directory = try TemporaryDirectory("durable")
        var configuration = DurableStoreConfiguration()
        configuration.budgets.dedupeBytesPerClient = 100
        configuration.budgets.dedupeCapacity = 3
        let engine = try DurableEngine.open(directory, configuration)
        #expect(try await engine.claim(key("big"), term: .seconds(5), window: .seconds(60)) == .run)
        let large = [UInt8](repeating: 7, count: 200)
        #expect(try await engine.finish(key("big"), reply: large, window: .seconds(60)) == .notKept)
        #expect(try await engine.claim(key("big"), term: .seconds(5), window: .seconds(60)) == .notKept)
        #expect(try await engine.claim(key("small"), term: .seconds(5), window: .seconds(60)) == .run)
        #expect(try await engine.finish(key("small"), reply: bytes("ok"), window: .seconds(60)) == .stored)
        #expect(try await engine.claim(key("1", principal: "bo"), term: .seconds(5), window: .seconds(60)) == .run)
        guard
            case .refused(let all) = try await engine.claim(
                key("2", principal: "cy"), term: .seconds(5), window: .seconds(60))
        else {
            Issue.record("the budget in all did not refuse")
            return
        }
        #expect(all.scope == .entries)
        // The sums match the entries, in the same transactions.
        #expect(try await engine.integer("SELECT entries FROM usage WHERE level = 0") == 3)
        #expect(
            try await engine.integer("SELECT bytes FROM usage WHERE level = 0")
                == engine.integer("SELECT sum(charge) FROM replies"))
        await engine.close()
    }

    /// The store as the server's window: what each engine answer becomes.
    @Test func theStoreAnswersUnknownAndNotKeptAsTheFleetStoresDo() async throws {
        let directory = try TemporaryDirectory("durable")
        var configuration = DurableStoreConfiguration()
        configuration.budgets.dedupeBytesPerClient = 50
        var store = try DurableStore(directory: directory.path, configuration: configuration)
        let window = Duration.seconds(60)
        func claim(_ id: String) -> DedupeClaimRequest {
            DedupeClaimRequest(principal: "ann", clientID: "c", requestID: id, runningFor: .seconds(5), window: window)
        }
        #expect(try await store.begin(claim("1")) == .run)
        #expect(try await store.begin(claim("2")) == .run)
        #expect(
            try await store.finish(DedupeFinishRequest(principal: "ann", clientID: "c", requestID: "2", reply: .init(repeating: 1, count: 80), window: window)))
        await store.close()
        let closed = await failure {
            _ = try await store.begin(claim("3"))
        }
        #expect(closed?.code == .shutdown)

        store = try DurableStore(directory: directory.path, configuration: configuration)
        let unknown = await failure {
            _ = try await store.begin(claim("1"))
        }
        #expect(unknown?.code == .outcomeUnknown)
        let notKept = await failure {
            _ = try await store.begin(claim("2"))
        }
        #expect(notKept?.code == .resourceExhausted)
        #expect((notKept?.underlying as? DedupeRefusal)?.ran == true)
        await store.close()
    }
}
