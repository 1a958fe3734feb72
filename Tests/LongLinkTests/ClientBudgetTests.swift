import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLink

/// The client's bounds that have a count and a byte budget of their own: coalesced calls, the
/// cache in memory, the pushes a stream holds unacknowledged.
@Suite("Client budgets", .sharedMachine)
struct ClientBudgetTests {
    private let far = ContinuousClock.now.advanced(by: .seconds(60))

    /// A shared request that answers when `gate` opens.
    private func gated(_ gate: Mailbox<Void>) -> @Sendable () async throws -> [UInt8] {
        {
            try await gate.next(within: .seconds(20), "the test to answer")
            return [42]
        }
    }

    private func neverSleep() -> @Sendable () async throws -> Void {
        { try await Task.sleep(for: .seconds(60)) }
    }

    /// Past the callers' bound, a call is refused at once; the callers waiting are untouched and
    /// get their answer.
    @Test func coalescedCallsPastTheCountBoundAreRefusedAndTheOthersAnswered() async throws {
        let coalescer = Coalescer(callLimit: 2, byteLimit: .max)
        let gate = Mailbox<Void>()
        let first = Task { try await coalescer.run("a", deadline: far, sleep: neverSleep(), start: gated(gate)) }
        let second = Task { try await coalescer.run("a", deadline: far, sleep: neverSleep(), start: gated(gate)) }
        try await eventually("two callers wait") { coalescer.usage.callers == 2 }
        do {
            _ = try await coalescer.run("b", deadline: far, sleep: neverSleep(), start: gated(gate))
            Issue.record("a third caller was taken")
        } catch let error as LongLinkError {
            #expect(error.code == .resourceExhausted)
        }
        gate.put(())
        #expect(try await first.value == [42])
        #expect(try await second.value == [42])
        #expect(coalescer.usage == (0, 0, 0))
    }

    /// Past the byte bound, a call that would start another shared request is refused; one that
    /// joins a shared request in flight still fits, and one always fits alone.
    @Test func coalescedCallsPastTheByteBoundAreRefusedButMayJoin() async throws {
        let coalescer = Coalescer(callLimit: .max, byteLimit: 100)
        let gate = Mailbox<Void>()
        let big = Task {
            try await coalescer.run("big", payloadBytes: 500, deadline: far, sleep: neverSleep(), start: gated(gate))
        }
        try await eventually("the big flight holds its bytes") { coalescer.usage.bytes == 503 }
        let joiner = Task {
            try await coalescer.run("big", payloadBytes: 500, deadline: far, sleep: neverSleep(), start: gated(gate))
        }
        try await eventually("the second caller joined") { coalescer.usage.callers == 2 }
        do {
            _ = try await coalescer.run("small", payloadBytes: 1, deadline: far, sleep: neverSleep(), start: gated(gate))
            Issue.record("another shared request started past the byte bound")
        } catch let error as LongLinkError {
            #expect(error.code == .resourceExhausted)
        }
        gate.put(())
        #expect(try await big.value == [42])
        #expect(try await joiner.value == [42])
    }

    /// A session's end fails every caller waiting on a shared request with its error, at once.
    @Test func theEndOfASessionFailsEveryCoalescedCall() async throws {
        let coalescer = Coalescer()
        let gate = Mailbox<Void>()
        let waiting = (0..<3).map { _ in
            Task { try await coalescer.run("a", deadline: far, sleep: neverSleep(), start: gated(gate)) }
        }
        try await eventually("three callers wait") { coalescer.usage.callers == 3 }
        coalescer.endAll(with: LongLinkError(code: .goAway, message: "kicked"))
        for call in waiting {
            do {
                _ = try await within(.seconds(20), "the call to end") { try await call.value }
                Issue.record("a call of the ended session was answered")
            } catch let error as LongLinkError {
                #expect(error.code == .goAway)
            }
        }
        #expect(coalescer.usage == (0, 0, 0))
    }

    /// The cache in memory is bounded by count, least recently used first.
    @Test func theCacheIsBoundedByCount() {
        var store = CacheStore(byteLimit: .max, entryLimit: 3)
        let now = ContinuousClock.now
        for key in ["a", "b", "c"] { store.store(key, payload: [1], method: "m", at: now) }
        _ = store.lookup("a", maxAge: nil, now: now)
        #expect(store.store("d", payload: [1], method: "m", at: now) == ["b"])
        #expect(store.count == 3)
    }

    /// Keys count against the cache's bytes: a derived key holds the whole payload of the call.
    @Test func cacheKeysCountAgainstItsBytes() {
        var store = CacheStore(byteLimit: 10_000)
        let now = ContinuousClock.now
        for n in 0..<10 {
            store.store(String(repeating: "k", count: 2_000) + "\(n)", payload: [1], method: "m", at: now)
        }
        #expect(store.bytes <= store.byteLimit)
        #expect(store.count == 4)
    }

    /// A stream that acknowledges after processing holds at most its byte budget of reliable
    /// pushes, buffered and in the app's hands together; past it, they are refused (left with the
    /// server) until an ack, and one always fits alone.
    @Test func unacknowledgedPushesAreBoundedByBytes() async {
        let consumer = PushSubscriber(
            id: 1, filter: .all, limit: 100, unacknowledgedLimit: 100, unacknowledgedByteLimit: 1_000
        ) { _ in }
        func push(_ seq: UInt64, bytes: Int) -> Push {
            Push(seq: seq, topic: "alerts", payload: [UInt8](repeating: 0, count: bytes))
        }
        #expect(consumer.offer(push(1, bytes: 600)) == .accepted)
        #expect(await consumer.next()?.seq == 1)
        #expect(consumer.offer(push(2, bytes: 300)) == .accepted)
        #expect(consumer.offer(push(3, bytes: 200)) == .refused)
        #expect(!consumer.isBelowHalf)
        consumer.acknowledge(1)
        #expect(consumer.isBelowHalf)
        #expect(consumer.offer(push(3, bytes: 200)) == .accepted)
        // One push larger than the whole budget fits a stream that holds nothing.
        #expect(await consumer.next()?.seq == 2)
        #expect(await consumer.next()?.seq == 3)
        consumer.acknowledge(2)
        consumer.acknowledge(3)
        #expect(consumer.offer(push(4, bytes: 5_000)) == .accepted)
    }
}
