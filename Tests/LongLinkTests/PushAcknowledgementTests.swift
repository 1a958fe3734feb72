import LongLinkCore
import LongLinkTransport
import LongLinkTestSupport
import Testing

@testable import LongLink

/// A consumer that acknowledges after processing, without a socket: what it hands over is the
/// consumer's until the app's ack, and given back when it ends.
@Suite("Push acknowledgement after processing", .sharedMachine)
struct PushAcknowledgementTests {
    /// The seqs the consumer reported taken, in order.
    private final class Taken: Sendable {
        private let state = Locked<[PushKey]>([])
        func add(_ keys: [PushKey]) { state.withLock { $0 += keys } }
        var keys: [PushKey] { state.withLock { $0 } }
    }

    private func consumer(limit: Int = 100, unacknowledged: Int? = 10, _ taken: Taken) -> PushSubscriber {
        PushSubscriber(id: 1, filter: .all, limit: limit, unacknowledgedLimit: unacknowledged) { subscriber in
            taken.add(subscriber.drainTaken())
        }
    }

    private func push(_ seq: UInt64) -> Push { Push(seq: seq, topic: "alerts", payload: []) }

    @Test func aPushHandedOverIsTakenOnlyWithItsAckAndOnce() async {
        let taken = Taken()
        let consumer = consumer(taken)
        #expect(consumer.offer(push(1)) == .accepted)
        #expect(await consumer.next()?.seq == 1)
        #expect(taken.keys.isEmpty)
        #expect(consumer.unacknowledgedCount == 1)
        consumer.acknowledge(1)
        #expect(taken.keys == [1])
        consumer.acknowledge(1)
        #expect(taken.keys == [1])
        #expect(consumer.unacknowledgedCount == 0)
    }

    /// Ended before the ack: the push is given back with the untaken ones, and a late ack does
    /// nothing.
    @Test func anUnacknowledgedPushIsGivenBackWhenTheConsumerEndsAndALateAckIsHarmless() async {
        let taken = Taken()
        let consumer = consumer(taken)
        for seq in UInt64(1)...3 { _ = consumer.offer(push(seq)) }
        #expect(await consumer.next()?.seq == 1)
        #expect(await consumer.next()?.seq == 2)
        consumer.acknowledge(2)
        #expect(consumer.finish().map(\.seq).sorted() == [1, 3])
        consumer.acknowledge(1)
        #expect(taken.keys == [2])
    }

    /// Buffered and handed-over pushes together never pass the limit: past it, reliable pushes are
    /// refused (left with the server) until the app acknowledges; best-effort ones still fit.
    @Test func theUnacknowledgedLimitRefusesReliablePushesUntilAnAck() async {
        let taken = Taken()
        let consumer = consumer(unacknowledged: 2, taken)
        #expect(consumer.offer(push(1)) == .accepted)
        #expect(consumer.offer(push(2)) == .accepted)
        #expect(consumer.offer(push(3)) == .refused)
        #expect(await consumer.next()?.seq == 1)
        #expect(consumer.offer(push(3)) == .refused)
        #expect(!consumer.isBelowHalf)
        consumer.acknowledge(1)
        #expect(consumer.isBelowHalf)
        #expect(consumer.offer(push(3)) == .accepted)
        #expect(consumer.offer(Push(seq: 0, topic: "alerts", payload: [1])) == .accepted)
    }

    /// A consumer that acknowledges at hand-over takes on hand-over, as ever.
    @Test func aConsumerWithoutTheLimitTakesAtHandOver() async {
        let taken = Taken()
        let consumer = consumer(unacknowledged: nil, taken)
        _ = consumer.offer(push(1))
        #expect(await consumer.next()?.seq == 1)
        #expect(taken.keys == [1])
        #expect(consumer.unacknowledgedCount == 0)
    }
}
