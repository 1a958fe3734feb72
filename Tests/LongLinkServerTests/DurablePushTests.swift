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
        let held = Mailbox<Void>()
        let release = DispatchSemaphore(value: 0)
        let hold = Task {
            try await engine.onWriter {
                held.put(())
                release.wait()
            }
        }
        try await held.next(within: .seconds(10), "the writer held")
        let before = engine.statistics.withLock { $0 }
        let count = 200
        let appends = (0..<count).map { n in
            Task { try await engine.append(principal: "p\(n % 7)", topic: "t", payload: bytes("\(n)")) }
        }
        try await eventually("every append queued") { engine.queuedOperations == count }
        release.signal()
        try await hold.value
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
