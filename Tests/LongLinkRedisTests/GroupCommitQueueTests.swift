import LongLinkCore
import LongLinkServer
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLinkRedis

/// The group commit both Redis stores share (``GroupCommitQueue``), without Redis: lanes leave
/// independently, a lane's batches keep to the byte bound in call order, and each shutdown rule
/// does what it says with what is queued.
@Suite(.timeLimit(.minutes(1)))
struct GroupCommitQueueTests {
    struct Sized: GroupCommitItem {
        let size: Int
        let outcome = OneShot<Result<Int, LongLinkError>>()
    }

    typealias Queue = GroupCommitQueue<String, Sized>

    /// A queue whose first batch of each lane waits at the lane's gate; every batch is reported as
    /// its lane and its items' sizes, then answered with those sizes.
    static func queue(
        _ rule: Queue.ShutdownRule, gates: [String: OneShot<Void>], sent: Mailbox<String>
    ) -> Queue {
        let opened = Locked(Set<String>())
        return Queue(
            limits: .init(items: 10, bytes: 100), shutdownRule: rule, shutDown: "shut down", cancelled: "cancelled"
        ) { lane, batch, sending in
            sent.put("\(lane):\(batch.map(\.size))")
            if let gate = gates[lane], opened.withLock({ $0.insert(lane).inserted }) { await gate.value() }
            sending(1)
            for item in batch { item.outcome.resume(.success(item.size)) }
        }
    }

    /// Queues `sizes` in `lane` one after another behind its round trip in flight, each seen
    /// queued before the next is made, so that their order is the calls' order.
    static func queueBehind(
        _ queue: Queue, lane: String, _ sizes: [Int]
    ) async throws -> [Task<Int, any Error>] {
        var tasks: [Task<Int, any Error>] = []
        for size in sizes {
            let before = queue.queuedCount(lane) ?? 0
            tasks.append(Task { try await queue.submit(Sized(size: size), lane: lane) })
            try await eventually("\(size) queued in \(lane)", within: .seconds(10)) {
                queue.queuedCount(lane) == before + 1
            }
        }
        return tasks
    }

    /// The task's value, waited for within a bound (an outcome never resumed fails the test
    /// instead of hanging it).
    static func value<T: Sendable>(_ task: Task<T, any Error>) async throws -> T {
        let box = Mailbox<Result<T, any Error>>()
        Task { box.put(await task.result) }
        return try await box.next(within: .seconds(10), "an outcome").get()
    }

    @Test func aLaneInFlightHoldsUpNoOtherAndItsQueueLeavesWithinTheByteBound() async throws {
        let gate = OneShot<Void>()
        let sent = Mailbox<String>()
        let queue = Self.queue(.sendQueued, gates: ["a": gate], sent: sent)
        let first = Task { try await queue.submit(Sized(size: 1), lane: "a") }
        #expect(try await sent.next(within: .seconds(10)) == "a:[1]")
        // Lane b leaves while a's round trip is stuck.
        #expect(try await queue.submit(Sized(size: 2), lane: "b") == 2)
        #expect(try await sent.next(within: .seconds(10)) == "b:[2]")
        let rest = try await Self.queueBehind(queue, lane: "a", [60, 60, 30, 200])
        gate.resume(())
        // 60 + 60 passes 100; 200 alone does too, and leaves alone.
        #expect(try await sent.next(within: .seconds(10)) == "a:[60]")
        #expect(try await sent.next(within: .seconds(10)) == "a:[60, 30]")
        #expect(try await sent.next(within: .seconds(10)) == "a:[200]")
        #expect(try await Self.value(first) == 1)
        for (task, size) in zip(rest, [60, 60, 30, 200]) { #expect(try await Self.value(task) == size) }
        #expect(queue.sent.batches == 5 && queue.sent.calls == 5)
    }

    /// An operation that finds its lane idle is sent from its caller's task (no hop to a sending
    /// task), so its caller's cancellation reaches that call; a batch of operations queued behind it
    /// leaves from a sending task that no caller's cancellation reaches.
    @Test func aLoneOperationLeavesFromItsCallerAndTheQueuedOnesFromASendingTask() async throws {
        let gate = OneShot<Void>()
        let sent = Mailbox<String>()
        let started = Mailbox<Int>()
        let queue = Queue(
            limits: .init(items: 10, bytes: 100), shutdownRule: .sendQueued, shutDown: "shut down",
            cancelled: "cancelled"
        ) { lane, batch, sending in
            if batch.map(\.size) == [1] {
                started.put(1)
                await gate.value()
            }
            sent.put("\(batch.map(\.size)) cancelled: \(Task.isCancelled)")
            sending(1)
            for item in batch { item.outcome.resume(.success(item.size)) }
        }
        let first = Task { try await queue.submit(Sized(size: 1), lane: "a") }
        _ = try await started.next(within: .seconds(10))
        let rest = try await Self.queueBehind(queue, lane: "a", [2, 3])
        first.cancel()
        gate.resume(())
        #expect(try await sent.next(within: .seconds(10)) == "[1] cancelled: true")
        #expect(try await sent.next(within: .seconds(10)) == "[2, 3] cancelled: false")
        _ = try? await Self.value(first)
        for (task, size) in zip(rest, [2, 3]) { #expect(try await Self.value(task) == size) }
        #expect(queue.sent.batches == 2)
    }

    @Test func shutdownSendsWhatIsQueuedInEveryLaneBeforeReturning() async throws {
        let gates = ["a": OneShot<Void>(), "b": OneShot<Void>()]
        let sent = Mailbox<String>()
        let queue = Self.queue(.sendQueued, gates: gates, sent: sent)
        var queued: [Task<Int, any Error>] = []
        for lane in ["a", "b"] {
            queued.append(Task { try await queue.submit(Sized(size: 1), lane: lane) })
            _ = try await sent.next(within: .seconds(10))
            queued += try await Self.queueBehind(queue, lane: lane, [2, 3])
        }
        // Its return goes into the same log as the batches, so their order shows.
        let shutdown = Task<Void, any Error> {
            await queue.shutdown()
            sent.put("returned")
        }
        try await eventually("shutdown began", within: .seconds(10)) { queue.isShutDown }
        let refused = await #expect(throws: LongLinkError.self) {
            try await queue.submit(Sized(size: 9), lane: "c")
        }
        #expect(refused?.code == .shutdown)
        gates["a"]!.resume(())
        #expect(try await sent.next(within: .seconds(10)) == "a:[2, 3]")
        try await eventually("lane a's turn ended", within: .seconds(10)) { queue.queuedCount("a") == nil }
        // Lane b still has its batch to send: shutdown returns after it, not when lane a is done.
        gates["b"]!.resume(())
        #expect(try await sent.next(within: .seconds(10)) == "b:[2, 3]")
        #expect(try await sent.next(within: .seconds(10)) == "returned")
        try await Self.value(shutdown)
        for (task, size) in zip(queued, [1, 2, 3, 1, 2, 3]) { #expect(try await Self.value(task) == size) }
    }

    @Test func shutdownFailsWhatIsQueuedAndLetsTheRoundTripInFlightEnd() async throws {
        let gate = OneShot<Void>()
        let sent = Mailbox<String>()
        let queue = Self.queue(.failQueued, gates: ["a": gate], sent: sent)
        let first = Task { try await queue.submit(Sized(size: 1), lane: "a") }
        _ = try await sent.next(within: .seconds(10))
        let queued = try await Self.queueBehind(queue, lane: "a", [2, 3])
        await queue.shutdown()
        for task in queued {
            let error = await #expect(throws: LongLinkError.self) { try await Self.value(task) }
            #expect(error?.code == .shutdown)
        }
        gate.resume(())
        #expect(try await Self.value(first) == 1)
        try await eventually("the lane's turn ended", within: .seconds(10)) { queue.queuedCount("a") == nil }
        #expect(sent.count == 0)
    }
}
