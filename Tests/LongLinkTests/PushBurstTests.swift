import LongLinkCore
import LongLinkTestSupport
import LongLinkTransport
import Testing

@testable import LongLink

/// The pushes of one read offered to a consumer whose task waits: buffered as a burst, and the
/// task woken once for all of them (``PushSubscriber/offer(_:wakeLater:)``).
@Suite("Push bursts handed over in one wake", .sharedMachine)
struct PushBurstTests {
    private func consumer(limit: Int = 100) -> PushSubscriber {
        PushSubscriber(id: 1, filter: .all, limit: limit, conflationKey: PushConflation.byTopic.key) { _ in }
    }

    private func tick(_ price: Int) -> Push {
        Push(seq: 0, topic: "quotes", payload: bytes("\(price)"))
    }

    /// The payloads of the next `count` pushes as text, after checking that they are buffered (so
    /// that a missing one fails the test instead of waiting forever).
    private func take(_ count: Int, from consumer: PushSubscriber) async throws -> [String] {
        try #require(consumer.count == count)
        var taken: [String] = []
        for _ in 0..<count { taken.append(text(await consumer.next()?.payload ?? [])) }
        return taken
    }

    /// Starts a task waiting in `next()` and returns it once it waits.
    private func waitingTask(_ consumer: PushSubscriber) async throws -> Task<Push?, Never> {
        let task = Task { await consumer.next() }
        try await eventually("a task waits") { consumer.waitingCount == 1 }
        return task
    }

    /// A waiting consumer keeps up: a burst of one topic is not conflated, wakes the task once
    /// (only the first push asks for the wake), and arrives whole and in order.
    @Test func aBurstForAWaitingTaskIsDeliveredWholeAndInOrder() async throws {
        let consumer = consumer()
        let task = try await waitingTask(consumer)
        var wakes = 0
        for price in 1...5 {
            let (offered, wake) = consumer.offer(tick(price), wakeLater: true)
            #expect(offered == .accepted)
            if wake { wakes += 1 }
        }
        #expect(wakes == 1)
        #expect(consumer.count == 5)
        #expect(consumer.waitingCount == 1)
        consumer.wakeWaiters()
        let first = text(await task.value?.payload ?? [])
        #expect([first] + (try await take(4, from: consumer)) == ["1", "2", "3", "4", "5"])
    }

    /// Once woken, the consumer is behind until it waits again: the next burst conflates by key,
    /// keeping the newest, without touching the pushes of the first burst.
    @Test func aBurstWhileTheConsumerIsBusyConflatesToTheNewest() async throws {
        let consumer = consumer()
        let task = try await waitingTask(consumer)
        for price in 1...3 { _ = consumer.offer(tick(price), wakeLater: true) }
        consumer.wakeWaiters()
        #expect(text(await task.value?.payload ?? []) == "1")
        #expect(consumer.offer(tick(10), wakeLater: true).offered == .accepted)
        #expect(consumer.offer(tick(11), wakeLater: true).offered == .conflated)
        #expect(consumer.offer(tick(12), wakeLater: true).offered == .conflated)
        #expect(try await take(3, from: consumer) == ["2", "3", "12"])
        #expect(consumer.count == 0)
    }

    /// A burst respects the buffer's limit: past it a push is refused (a reliable one stays with
    /// the server), so a flood never grows the buffer.
    @Test func aBurstStopsAtTheLimit() async throws {
        let consumer = consumer(limit: 3)
        _ = try await waitingTask(consumer)
        for seq in UInt64(1)...3 {
            #expect(consumer.offer(Push(seq: seq, topic: "alerts", payload: []), wakeLater: true).offered == .accepted)
        }
        #expect(consumer.offer(Push(seq: 4, topic: "alerts", payload: []), wakeLater: true).offered == .refused)
        #expect(consumer.count == 3)
        consumer.cancelWaiters()
    }

    /// The task is cancelled between the burst and its wake: it gets nil, and the reliable pushes
    /// of the burst are given back untaken (the server sends them again), none counted as taken.
    @Test func aCancelBeforeTheWakeGivesTheBurstBack() async throws {
        let taken = Locked<[PushKey]>([])
        let consumer = PushSubscriber(id: 1, filter: .all, limit: 100) { subscriber in
            let keys = subscriber.drainTaken()
            taken.withLock { $0 += keys }
        }
        let task = try await waitingTask(consumer)
        for seq in UInt64(1)...3 { _ = consumer.offer(Push(seq: seq, topic: "alerts", payload: []), wakeLater: true) }
        consumer.cancelWaiters()
        consumer.wakeWaiters()
        #expect(await task.value == nil)
        #expect(consumer.finish().map(\.seq) == [1, 2, 3])
        #expect(taken.withLock { $0 }.isEmpty)
    }

    /// A flood offered from another thread in bursts, as the loop offers a read's pushes and then
    /// wakes: every push arrives, once and in order, whether the consumer waits or finds a batch.
    @Test func aFloodOfBurstsArrivesWholeAndInOrder() async throws {
        let consumer = PushSubscriber(id: 1, filter: .all, limit: 1_000_000) { _ in }
        let total = 50_000
        let producer = Task.detached {
            var price = 0
            while price < total {
                var wake = false
                for _ in 0..<min(1 + price % 97, total - price) {
                    price += 1
                    let push = Push(seq: 0, topic: "quotes", payload: bytes("\(price)"))
                    if consumer.offer(push, wakeLater: true).wake { wake = true }
                }
                if wake { consumer.wakeWaiters() }
            }
        }
        let received = try await within(.seconds(60), "the flood arrives") {
            var received = 0
            var inOrder = true
            while received < total, let push = await consumer.next() {
                received += 1
                if text(push.payload) != String(received) { inOrder = false }
            }
            return (received, inOrder)
        }
        await producer.value
        #expect(received.0 == total)
        #expect(received.1)
        #expect(consumer.count == 0)
    }
}
