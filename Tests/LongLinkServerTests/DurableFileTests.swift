import Foundation
import LongLinkTestSupport
import Testing

@testable import LongLinkServer

/// The durable store's file and directory: what it refuses to open (naming the file, changing
/// nothing), one store per directory, a file it cannot write or a full disk, and its sync policies.
@Suite("Durable store: files", .timeLimit(.minutes(2)))
struct DurableFileTests {
    private func contents(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    /// A new file has 1 KB pages (a commit writes whole pages), and SQLite checkpoints every 64 MB
    /// of log, not every 1,000 pages.
    @Test func aNewFileHasSmallPagesAndCheckpointsByBytes() async throws {
        let directory = try TemporaryDirectory("durable")
        let engine = try DurableEngine.open(directory)
        #expect(try await engine.integer("PRAGMA page_size") == 1024)
        #expect(try await engine.integer("PRAGMA wal_autocheckpoint") == 65_536)
        await engine.close()
    }

    @Test func aFileThatIsNotADatabaseIsAnErrorNamingItAndIsLeftAlone() async throws {
        let directory = try TemporaryDirectory("durable")
        let path = directory.appending(DurableSchema.fileName)
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = await failure { _ = try DurableEngine.open(directory) }
        #expect(error?.code == .init(status: .dataLoss))
        #expect(error?.message.contains(path) == true)
        #expect(try contents(path) == garbage)
    }

    @Test func aFileOfANewerSchemaOrAnotherApplicationIsRefused() async throws {
        let directory = try TemporaryDirectory("durable")
        let path = directory.appending(DurableSchema.fileName)
        let engine = try DurableEngine.open(directory)
        _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("kept"))
        try await engine.execute("UPDATE meta SET value = 99 WHERE name = 'schema_version'")
        await engine.close()
        let newer = await failure { _ = try DurableEngine.open(directory) }
        #expect(newer?.code == .failedPrecondition)
        #expect(
            newer?.message.contains(path) == true && newer?.message.contains("schema 99") == true,
            "\(String(describing: newer))")

        let other = try TemporaryDirectory("durable")
        let database = try SQLiteDatabase(path: other.appending(DurableSchema.fileName))
        try database.execute("CREATE TABLE notes (text TEXT)")
        database.close()
        let foreign = await failure { _ = try DurableEngine.open(other) }
        #expect(foreign?.code == .failedPrecondition)
        #expect(foreign?.message.contains(other.appending(DurableSchema.fileName)) == true)
    }

    /// Pages of pushes overwritten in the middle of the file (its header and the tables read on
    /// opening intact): the check on opening finds it, and the store refuses the file rather than
    /// serve it damaged.
    @Test func aDamagedFileFailsItsCheckAndIsNotReset() async throws {
        let directory = try TemporaryDirectory("durable")
        let path = directory.appending(DurableSchema.fileName)
        let engine = try DurableEngine.open(directory)
        let payload = [UInt8](repeating: 0x5A, count: 300)
        for n in 0..<400 { _ = try await engine.append(principal: "p\(n % 20)", topic: "t", payload: payload) }
        await engine.close()
        var damaged = try contents(path)
        #expect(damaged.count > 30 * 4096)
        for offset in (20 * 4096)..<(24 * 4096) { damaged[offset] = UInt8(truncatingIfNeeded: offset &* 131) }
        try damaged.write(to: URL(fileURLWithPath: path))
        let error = await failure { _ = try DurableEngine.open(directory) }
        #expect(error?.code == .init(status: .dataLoss))
        #expect(error?.message.contains(path) == true)
        #expect(try contents(path) == damaged)
    }

    @Test func aSecondStoreOnTheDirectoryIsRefusedUntilTheFirstCloses() async throws {
        let directory = try TemporaryDirectory("durable")
        let first = try DurableStore(directory: directory.path)
        let second = await failure { _ = try DurableStore(directory: directory.path) }
        #expect(second?.code == .failedPrecondition)
        #expect(second?.message.contains(directory.appending(DurableDirectoryLock.fileName)) == true)
        #expect(second?.message.contains("process \(getpid())") == true)
        await first.close()
        let third = try DurableStore(directory: directory.path)
        await third.close()
    }

    @Test func aDirectoryThatCannotBeMadeIsAnErrorNamingIt() async throws {
        let directory = try TemporaryDirectory("durable")
        let file = directory.appending("plain-file")
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let error = await failure { _ = try DurableStore(directory: file + "/data") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains(file) == true)
    }

    /// A file that cannot be written (as in a read-only directory): producers get `UNAVAILABLE`
    /// naming it, nothing stored changes, reads go on; once writable, writes go on too.
    @Test func aReadOnlyFileRefusesWritesAndKeepsAnsweringReads() async throws {
        let directory = try TemporaryDirectory("durable")
        let store = try DurableStore(directory: directory.path)
        _ = try await store.append(PushAppend(principal: "ann", topic: "t", payload: bytes("1")))
        try await store.engine.execute("PRAGMA query_only = ON")
        let refused = await failure { _ = try await store.append(PushAppend(principal: "ann", topic: "t", payload: bytes("2"))) }
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.contains(store.path) == true)
        let claim = await failure {
            _ = try await store.begin(DedupeClaimRequest(principal: "ann", clientID: "c", requestID: "1", runningFor: .seconds(5)))
        }
        #expect(claim?.code == .unavailable)
        #expect(texts(try await store.unacknowledged(PushRead(principal: "ann", limit: 10))) == ["1"])
        try await store.engine.execute("PRAGMA query_only = OFF")
        #expect(try await store.append(PushAppend(principal: "ann", topic: "t", payload: bytes("2"))).seq == 2)
        await store.close()
    }

    /// The disk full (SQLite's page limit at the file's size): producers get `RESOURCE_EXHAUSTED`
    /// naming the file, nothing stored is damaged, reads and small writes that fit go on.
    @Test func aFullDiskRefusesPushesAndDamagesNothing() async throws {
        let directory = try TemporaryDirectory("durable")
        let store = try DurableStore(directory: directory.path)
        for n in 1...20 { _ = try await store.append(PushAppend(principal: "ann", topic: "t", payload: bytes("\(n)"))) }
        let pages = try #require(await store.engine.integer("PRAGMA page_count"))
        try await store.engine.execute("PRAGMA max_page_count = \(pages)")
        let large = [UInt8](repeating: 1, count: 64 << 10)
        let refused = await failure { _ = try await store.append(PushAppend(principal: "ann", topic: "t", payload: large)) }
        #expect(refused?.code == .resourceExhausted)
        #expect(refused?.message.contains(store.path) == true)
        #expect(try await store.unacknowledged(PushRead(principal: "ann", limit: 100)).map(\.seq) == Array(1...20))
        // An acknowledgement frees pages: then the next push fits, under the next seq.
        try await store.acknowledge(AcknowledgedPushes(principal: "ann", seqs: Array(1...20)))
        try await store.engine.execute("PRAGMA max_page_count = \(pages + 64)")
        #expect(try await store.append(PushAppend(principal: "ann", topic: "t", payload: large)).seq == 21)
        #expect(
            try await store.engine.integer("SELECT count(*) FROM pragma_quick_check WHERE quick_check <> 'ok'") == 0)
        await store.close()
    }

    @Test(arguments: [
        (DurableSyncPolicy.everyCommit, Int64(2)), (.interval(.milliseconds(20)), 1), (.never, 0),
    ])
    func eachSyncPolicySetsSQLitesSynchronous(policy: DurableSyncPolicy, synchronous: Int64) async throws {
        let directory = try TemporaryDirectory("durable")
        var configuration = DurableStoreConfiguration()
        configuration.sync = policy
        let engine = try DurableEngine.open(directory, configuration)
        #expect(try await engine.integer("PRAGMA synchronous") == synchronous)
        _ = try await engine.append(principal: "ann", topic: "t", payload: bytes("1"))
        if policy.checkpointInterval != nil {
            // The interval policy's sync point follows the write within its interval.
            try await eventually("a checkpoint") { engine.statistics.withLock { $0.checkpoints } >= 1 }
        } else {
            #expect(engine.statistics.withLock { $0.checkpoints } == 0)
        }
        await engine.close()
    }
}
