import LongLinkServer
import LongLinkTestSupport
import Testing

@testable import LongLinkRedis

/// Group commit in ``RedisPushStore/append(principal:topic:payload:)`` against a real redis-server:
/// appends that queue behind a call in flight leave as one produce script call.
///
/// Batches are made deterministic by pausing Redis (SIGSTOP): the first append's call is then in
/// flight and stuck, and the next ones queue behind it (``ProduceQueue/queuedCount(_:)``).
@Suite(.sharedMachine, .enabled(if: RedisServerProcess.testsEnabled), .timeLimit(.minutes(10)))
struct RedisPushBatchTests {
    @Test func concurrentAppendsGetDistinctSeqsInEachCallersOrderAndAllAreStored() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let before = try await scriptCalls(store)
            let callers = 16
            let perCaller = 25
            let results = try await withThrowingTaskGroup(of: [(UInt64, [UInt8])].self) { group in
                for caller in 0..<callers {
                    group.addTask {
                        var seqs: [(UInt64, [UInt8])] = []
                        for index in 0..<perCaller {
                            let payload = [UInt8(caller), UInt8(index)]
                            seqs.append(
                                (
                                    try await store.append(PushAppend(principal: "p", topic: "t", payload: payload))
                                        .seq, payload
                                ))
                        }
                        return seqs
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Each caller's own appends got rising seqs; together they are 1...N, each stored with
            // the payload its caller sent.
            for seqs in results { #expect(seqs.map(\.0) == seqs.map(\.0).sorted()) }
            let all = results.flatMap { $0 }.sorted { $0.0 < $1.0 }
            #expect(all.map(\.0) == Array(1...UInt64(callers * perCaller)))
            let stored = try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 1_000))
            #expect(stored.map(\.seq) == all.map(\.0))
            #expect(stored.map(\.payload) == all.map(\.1))
            // Group commit happened: fewer script runs than pushes (one per batch).
            let calls = try await scriptCalls(store) - before
            #expect(calls < callers * perCaller, "\(calls) produce calls for \(callers * perCaller) pushes")
            await store.shutdown()
        }
    }

    @Test func aBatchCrossingTheBoundsStoresWhatFitsInOrderAndRefusesTheRest() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.commandTimeout = .seconds(10)
            let store = try RedisPushStore(
                configuration: configuration, capacityPerPrincipal: 6, bytesPerPrincipal: 100)
            _ = try await store.append(PushAppend(principal: "count", topic: "t", payload: [1]))
            _ = try await store.append(
                PushAppend(principal: "bytes", topic: "", payload: [UInt8](repeating: 0, count: 10)))
            redis.pause()
            // count: held 1, bound 6: the in-flight push and four of the batch fit, two are refused.
            // bytes: held 10, bound 100: 40 and 40 fit, 30 does not, 10 still does (as if alone).
            let count = try await queue(store, "count", sizes: [1, 1, 1, 1, 1, 1, 1])
            let bytes = try await queue(store, "bytes", sizes: [0, 40, 40, 30, 10])
            redis.resume()
            let countResults = try await outcomes(count)
            #expect(countResults.map(\.seq) == [2, 3, 4, 5, 6, nil, nil])
            #expect(countResults.dropFirst(5).allSatisfy { $0.code == .resourceExhausted })
            let bytesResults = try await outcomes(bytes)
            #expect(bytesResults.map(\.seq) == [2, 3, 4, nil, 5])
            #expect(bytesResults[3].code == .resourceExhausted)
            #expect(
                try await store.unacknowledged(PushRead(principal: "count", after: 0, limit: 10)).map(\.seq)
                    == Array(1...6))
            let stored = try await store.unacknowledged(PushRead(principal: "bytes", after: 0, limit: 10))
            #expect(stored.map(\.payload.count) == [10, 0, 40, 40, 10])
            await store.shutdown()
        }
    }

    @Test func aPausedRedisFailsTheBatchWithUnavailableWithinTheTimeouts() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            // Long enough to queue the batch behind the call in flight on a loaded machine.
            configuration.commandTimeout = .seconds(2)
            let store = try RedisPushStore(configuration: configuration)
            _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            redis.pause()
            defer { redis.resume() }
            let started = ContinuousClock.now
            let tasks = try await queue(store, "p", sizes: [1, 1, 1, 1])
            let results = try await outcomes(tasks)
            // The call in flight fails at its 2 s command timeout; the batch behind it meets the
            // paused Redis on a fresh connection and fails at the connect timeout (or at once).
            #expect(results.allSatisfy { $0.code == .unavailable }, "\(results)")
            // Room for a loaded machine's stalls (6.05 s seen in CI against a 2 s margin).
            let bound = configuration.commandTimeout + configuration.connectTimeout + .seconds(8)
            #expect(ContinuousClock.now - started < bound)
            await store.shutdown()
        }
    }

    @Test func aKilledRedisFailsTheBatchWithUnavailable() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.commandTimeout = .seconds(10)
            let store = try RedisPushStore(configuration: configuration)
            _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            redis.pause()
            let tasks = try await queue(store, "p", sizes: [1, 1, 1, 1])
            let started = ContinuousClock.now
            await redis.crash()
            // Not the 10 s command timeout: the closed connection fails the call, and the batch
            // finds nothing to connect to.
            let results = try await outcomes(tasks)
            #expect(results.allSatisfy { $0.code == .unavailable }, "\(results)")
            #expect(ContinuousClock.now - started < .seconds(6))
            await store.shutdown()
        }
    }

    @Test func shutdownFailsTheQueuedAppendsAndLaterOnes() async throws {
        try await withRedisServer { redis in
            var configuration = redis.configuration
            configuration.commandTimeout = .seconds(10)
            let store = try RedisPushStore(configuration: configuration)
            _ = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            redis.pause()
            defer { redis.resume() }
            let appends = try await queue(store, "p", sizes: [1, 1, 1])
            await store.shutdown()
            let results = try await outcomes(appends)
            // The call in flight ends with its closed connection; the queued ones never left.
            #expect(results[0].code == .unavailable, "\(results)")
            #expect(results.dropFirst().allSatisfy { $0.code == .shutdown }, "\(results)")
            await #expect(throws: LongLinkError.self) {
                try await store.append(PushAppend(principal: "p", topic: "t", payload: [2]))
            }
            try await eventually("the sending task ends", within: .seconds(5)) {
                store.produces.queuedCount("p") == nil
            }
        }
    }

    @Test func aBatchAfterARestartWithoutPersistenceStartsANewEpoch() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration)
            let before = try await store.append(PushAppend(principal: "p", topic: "t", payload: [1]))
            try await redis.restartWithoutPersistence()
            // The first produce after the restart is a batch of three: it finds no meta hash.
            var stored: [StoredPush] = []
            try await eventually("the store works again after the restart", within: .seconds(10)) {
                let batch = (0..<3).map { ProducedPush(topic: "t", payload: [UInt8($0)]) }
                await RedisPushStore.produce(
                    batch, principal: "p", backend: store.backend, keys: store.keys, capacity: 10, bytes: 100)
                stored = []
                for push in batch {
                    guard let push = try? await push.outcome.value().get() else { return false }
                    stored.append(push)
                }
                return true
            }
            #expect(stored.map(\.seq) == [1, 2, 3])
            #expect(Set(stored.map(\.epoch)).count == 1 && stored[0].epoch != before.epoch && stored[0].epoch != 0)
            #expect(try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 10)) == stored)
            // Appends go on in that epoch.
            let next = try await store.append(PushAppend(principal: "p", topic: "t", payload: [9]))
            #expect(next.seq == 4 && next.epoch == stored[0].epoch)
            await store.shutdown()
        }
    }

    @Test func acksOfTheOldestPushesAndOfLaterOnesFreeTheirBytes() async throws {
        try await withRedisServer { redis in
            let store = try RedisPushStore(configuration: redis.configuration, bytesPerPrincipal: 60)
            for _ in 1...6 {
                _ = try await store.append(
                    PushAppend(principal: "p", topic: "t", payload: [UInt8](repeating: 0, count: 9)))
            }
            // Full by bytes (6 × 10).
            await #expect(throws: LongLinkError.self) {
                try await store.append(PushAppend(principal: "p", topic: "t", payload: []))
            }
            // 1 and 2 are the oldest (trimmed), 4 lies past unacknowledged 3, 9 was never stored.
            try await store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [2, 4, 1, 9]))
            #expect(
                try await store.unacknowledged(PushRead(principal: "p", after: 0, limit: 10)).map(\.seq) == [3, 5, 6])
            let meta = try await store.client.run(RedisCommand("HGET", store.keys.meta(principal: "p"), "bytes"))
            #expect(meta.int64 == 30)
            try await store.acknowledge(AcknowledgedPushes(principal: "p", seqs: [6, 3, 5]))
            #expect(try await store.unacknowledgedCount(principal: "p") == 0)
            #expect(
                try await store.client.run(RedisCommand("HGET", store.keys.meta(principal: "p"), "bytes")).int64 == 0)
            await store.shutdown()
        }
    }
}

/// A push's outcome: its seq, or the error code.
private struct Outcome: Sendable, CustomStringConvertible {
    var seq: UInt64?
    var code: LongLinkError.Code?
    var description: String { seq.map { "seq \($0)" } ?? "\(code.map { "\($0)" } ?? "?")" }
}

/// Appends started by ``queue(_:_:sizes:)``: each reports its outcome here, by its index.
private typealias Appends = (count: Int, results: Mailbox<(Int, Outcome)>)

/// Starts one append per size for `principal` while Redis is paused, each after the previous one
/// queued: the first is the call in flight, the others the next batch, in this order.
private func queue(_ store: RedisPushStore, _ principal: String, sizes: [Int]) async throws -> Appends {
    let results = Mailbox<(Int, Outcome)>()
    // The task that sent an earlier append may still be ending its turn (an empty queue): then a
    // count of 0 would not mean that the first of these is in flight.
    try await eventually("\(principal) has nothing in flight", within: .seconds(5)) {
        store.produces.queuedCount(principal) == nil
    }
    for (index, size) in sizes.enumerated() {
        Task {
            do throws(LongLinkError) {
                let payload = [UInt8](repeating: UInt8(index), count: size)
                let seq = try await store.append(PushAppend(principal: principal, topic: "", payload: payload)).seq
                results.put((index, Outcome(seq: seq)))
            } catch {
                results.put((index, Outcome(code: error.code)))
            }
        }
        try await eventually("append \(index) of \(principal) queued", within: .seconds(5)) {
            store.produces.queuedCount(principal) == index
        }
    }
    return (sizes.count, results)
}

/// Every append's outcome in the order they were started; each wait is bounded.
private func outcomes(_ appends: Appends) async throws -> [Outcome] {
    var results = [Outcome?](repeating: nil, count: appends.count)
    for _ in 0..<appends.count {
        let (index, outcome) = try await appends.results.next(within: .seconds(10), "an append's outcome")
        results[index] = outcome
    }
    return results.compactMap { $0 }
}

/// How many times Redis ran a script by SHA-1 so far.
private func scriptCalls(_ store: RedisPushStore) async throws -> Int {
    let info = try await store.client.run(RedisCommand("INFO", "commandstats")).string ?? ""
    let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("cmdstat_evalsha:") } ?? ""
    let calls = line.split(separator: ",").first?.split(separator: "=").last.flatMap { Int($0) }
    return calls ?? 0
}
