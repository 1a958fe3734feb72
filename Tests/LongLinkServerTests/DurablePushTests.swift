import Foundation
import LongLinkTestSupport
import Testing

@testable import LongLinkServer

/// The durable store's reliable pushes, on real SQLite files: numbering, reads, acknowledgements,
/// budgets, resuming after a reopen, and group commit.
@Suite("Durable store: pushes", .timeLimit(.minutes(2)))
struct DurablePushTests {
    @Test func pushesAreNumberedReadAndAcknowledged() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        var stored: [StoredPush] = []
        for n in 1...3 { stored.append(try await engine.append(principal: "ann", topic: "t", payload: bytes("a\(n)"))) }
        #expect(stored.map(\.seq) == [1, 2, 3])
        #expect(Set(stored.map(\.epoch)).count == 1 && stored[0].epoch != 0)
        #expect(texts(try await engine.unacknowledged(principal: "ann", after: 1, limit: 10)) == ["a2", "a3"])
        #expect(try await engine.unacknowledged(principal: "ann", after: 0, limit: 1).map(\.seq) == [1])
        try await engine.acknowledge(principal: "ann", seqs: [1, 3, 99], epoch: stored[0].epoch)
        #expect(try await engine.unacknowledged(principal: "ann", after: 0, limit: 10).map(\.seq) == [2])
        #expect(try await engine.unacknowledgedCount(principal: "ann") == 1)
        // Acks numbered in another epoch name other pushes: they delete nothing.
        try await engine.acknowledge(principal: "ann", seqs: [2], epoch: stored[0].epoch &+ 1)
        #expect(try await engine.unacknowledgedCount(principal: "ann") == 1)
        // An empty payload is stored as empty, not as nothing.
        let empty = try await engine.append(principal: "ann", topic: "", payload: [])
        #expect(try await engine.unacknowledged(principal: "ann", after: 3, limit: 10) == [empty])
        await engine.close()
    }

    @Test func namesAreComparedAsBytes() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        // "é" precomposed and decomposed: equal as Swift strings, two principals on the wire.
        _ = try await engine.append(principal: "caf\u{E9}", topic: "t", payload: bytes("one"))
        _ = try await engine.append(principal: "cafe\u{301}", topic: "t", payload: bytes("two"))
        #expect(texts(try await engine.unacknowledged(principal: "caf\u{E9}", after: 0, limit: 10)) == ["one"])
        #expect(texts(try await engine.unacknowledged(principal: "cafe\u{301}", after: 0, limit: 10)) == ["two"])
        await engine.close()
    }

    @Test func aReopenedStoreResumesEachPrincipalsEpochAndSeqs() async throws {
        let directory = try TemporaryDirectory("durable")
        var engine = try DurableEngine.open(directory)
        let first = try await engine.append(principal: "ann", topic: "t", payload: bytes("1"))
        _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("2"))
        _ = try await engine.append(principal: "bo", topic: "t", payload: bytes("b1"))
        try await engine.acknowledge(principal: "ann", seqs: [1], epoch: first.epoch)
        await engine.close()

        engine = try DurableEngine.open(directory)
        let kept = try await engine.unacknowledged(principal: "ann", after: 0, limit: 10)
        #expect(kept.map(\.seq) == [2] && kept.map(\.epoch) == [first.epoch])
        let next = try await engine.append(principal: "ann", topic: "t", payload: bytes("3"))
        #expect(next.seq == 3 && next.epoch == first.epoch)
        #expect(texts(try await engine.unacknowledged(principal: "bo", after: 0, limit: 10)) == ["b1"])
        await engine.close()
    }

    /// A principal left with nothing is forgotten; when it comes back, a new epoch, and seqs above
    /// every seq it had: none is given twice, across a reopen too.
    @Test func aPrincipalSeenAnewGetsANewEpochAndHigherSeqs() async throws {
        let directory = try TemporaryDirectory("durable")
        var engine = try DurableEngine.open(directory)
        let old = try await engine.append(principal: "ann", topic: "t", payload: bytes("1"))
        _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("2"))
        try await engine.acknowledge(principal: "ann", seqs: [1, 2], epoch: old.epoch)
        #expect(try await engine.integer("SELECT count(*) FROM principals") == 0)
        await engine.close()

        engine = try DurableEngine.open(directory)
        let fresh = try await engine.append(principal: "ann", topic: "t", payload: bytes("3"))
        #expect(fresh.epoch != old.epoch)
        #expect(fresh.seq == 3)
        await engine.close()
    }

    @Test func aPrincipalOverItsBudgetIsRefusedAndNothingIsDropped() async throws {
        let directory = try TemporaryDirectory("durable")
        var configuration = DurableStoreConfiguration()
        configuration.budgets.pushCapacityPerPrincipal = 2
        configuration.budgets.pushBytesPerPrincipal = 10
        let engine = try DurableEngine.open(directory, configuration)
        _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("1234"))
        // 5 + 6 bytes: over the byte budget though under the count.
        let tooLarge = await failure {
            _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("12345"))
        }
        #expect(tooLarge?.code == .resourceExhausted)
        let second = try await engine.append(principal: "ann", topic: "t", payload: bytes("1"))
        let third = await failure { _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("")) }
        #expect(third?.code == .resourceExhausted)
        #expect(texts(try await engine.unacknowledged(principal: "ann", after: 0, limit: 10)) == ["1234", "1"])
        // Another principal has its own budget; an ack gives room back.
        _ = try await engine.append(principal: "bo", topic: "t", payload: bytes("1234"))
        try await engine.acknowledge(principal: "ann", seqs: [second.seq], epoch: 0)
        #expect(try await engine.append(principal: "ann", topic: "t", payload: bytes("2")).seq == 3)
        await engine.close()
    }

    /// Writes queued while the writer is busy share its next transaction: one commit (one fsync)
    /// for all of them.
    @Test func concurrentAppendsShareOneTransaction() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        let writer = try await engine.holdWriter()
        let before = engine.statistics.withLock { $0 }
        let count = 200
        let appends = (0..<count).map { n in
            Task { try await engine.append(principal: "p\(n % 7)", topic: "t", payload: bytes("\(n)")) }
        }
        try await eventually("every append queued") { engine.queuedOperations == count }
        try await writer.letGo()
        var seqs: [String: [UInt64]] = [:]
        for (n, append) in appends.enumerated() { seqs["p\(n % 7)", default: []].append(try await append.value.seq) }
        let after = engine.statistics.withLock { $0 }
        #expect(after.transactions == before.transactions + 1)
        #expect(after.writes == before.writes + count)
        #expect(after.largestTransaction == count)
        // Each principal's seqs are dense and distinct.
        for principalSeqs in seqs.values { #expect(principalSeqs.sorted() == Array(1...UInt64(principalSeqs.count))) }
        await engine.close()
    }

    /// A write that fails in a turn shared with others is undone alone: the others commit in the
    /// same transaction under the seqs they would have had, and what the writer keeps of each
    /// principal (its next seq, its count) matches the file after it.
    @Test func aWriteThatFailsInATurnIsUndoneAloneAndTheOthersCommit() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        for name in ["ann", "bob", "cid"] { _ = try await engine.append(principal: name, topic: "t", payload: bytes("0")) }
        // A row in ann's next seq, put there behind the store's back: her next push fails on it
        // (a key conflict, which SQLite undoes alone), as a write failing on its own would.
        try await engine.execute(
            "INSERT INTO pushes (principal, seq, epoch, topic, payload, stored_at) VALUES (x'616e6e', 2, 1, x'74', x'00', 0)")
        let writer = try await engine.holdWriter()
        let before = engine.statistics.withLock { $0 }
        var others: [(name: String, task: Task<StoredPush, any Error>)] = []
        for n in 0..<6 {
            for name in ["bob", "cid"] {
                others.append((name, Task { try await engine.append(principal: name, topic: "t", payload: bytes("\(n)")) }))
            }
        }
        let conflicting = Task { await failure { _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("1")) } }
        try await eventually("every write queued") { engine.queuedOperations == others.count + 1 }
        try await writer.letGo()
        #expect(await conflicting.value != nil)
        var seqs: [String: [UInt64]] = [:]
        for (name, task) in others { seqs[name, default: []].append(try await task.value.seq) }
        #expect(seqs["bob"]?.sorted() == Array(2...7))
        #expect(seqs["cid"]?.sorted() == Array(2...7))
        let after = engine.statistics.withLock { $0 }
        #expect(after.transactions == before.transactions + 1)
        #expect(after.failedTransactions == before.failedTransactions)
        #expect(try await engine.unacknowledgedCount(principal: "ann") == 1)
        #expect(try await engine.append(principal: "bob", topic: "t", payload: bytes("next")).seq == 8)
        try await engine.acknowledge(principal: "cid", seqs: Array(1...7), epoch: 0)
        #expect(try await engine.unacknowledgedCount(principal: "cid") == 0)
        #expect(try await engine.integer("SELECT count(*) FROM principals WHERE principal = x'636964'") == 0)
        #expect(try await engine.integer("SELECT held FROM principals WHERE principal = x'626f62'") == 8)
        await engine.close()
    }

    /// The writer's copy of the principals' rows stays bounded: past its capacity it is emptied
    /// once the changed rows are taken, and rows left with nothing are dropped at once.
    @Test func theWritersCopyOfThePrincipalsIsBounded() {
        var logs = DurablePrincipalLogs()
        for n in 0...DurablePrincipalLogs.capacity + 1 {
            logs.update(Array("p\(n)".utf8), DurablePrincipalLog(epoch: 1, next: 2, held: n == 0 ? 0 : 1, bytes: 1))
        }
        let changed = logs.takeDirty()
        #expect(changed.count == DurablePrincipalLogs.capacity + 2)
        #expect(logs.rows.isEmpty && logs.dirty.isEmpty)
        logs.update(Array("gone".utf8), DurablePrincipalLog(epoch: 1, next: 5, held: 0, bytes: 0))
        logs.update(Array("kept".utf8), DurablePrincipalLog(epoch: 1, next: 5, held: 2, bytes: 9))
        #expect(logs.takeDirty().count == 2)
        #expect(logs[Array("gone".utf8)] == nil)
        #expect(logs[Array("kept".utf8)]?.held == 2)
    }

    /// A process crash leaves the files as they were after the last commit: a copy taken then (the
    /// log not yet checkpointed into the file) opens with every committed push.
    @Test func theFilesAsACrashLeavesThemHoldEveryCommittedPush() async throws {
        let directory = try TemporaryDirectory("durable")
        let copy = try TemporaryDirectory("durable-copy")
        let engine = try DurableEngine.open(directory)
        for n in 1...50 { _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("\(n)")) }
        for name in [DurableSchema.fileName, DurableSchema.fileName + "-wal"] {
            try FileManager.default.copyItem(atPath: directory.appending(name), toPath: copy.appending(name))
        }
        await engine.close()
        let restored = try DurableEngine.open(copy)
        let pushes = try await restored.unacknowledged(principal: "ann", after: 0, limit: 100)
        #expect(pushes.map(\.seq) == Array(1...50))
        #expect(try await restored.append(principal: "ann", topic: "t", payload: bytes("51")).seq == 51)
        await restored.close()
    }
}
