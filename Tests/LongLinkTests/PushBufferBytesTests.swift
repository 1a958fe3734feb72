import LongLinkTestSupport
import Testing

@testable import LongLink

/// The client's push buffers are bounded in payload bytes as well as in count, and past the byte
/// bound a push meets the count bound's policy: refused by a consumer's buffer (a reliable one
/// stays with the server), or left with the server when nobody listens yet.
@Suite("Push buffers bounded in bytes", .sharedMachine)
struct PushBufferBytesTests {
    private func push(_ seq: UInt64, bytes: Int) -> Push {
        Push(seq: seq, topic: "alerts", payload: [UInt8](repeating: 1, count: bytes))
    }

    @Test func aConsumersBufferRefusesPastItsBytesAndAlwaysTakesOneIntoAnEmptyBuffer() async {
        let consumer = PushSubscriber(id: 1, filter: .all, limit: 100, byteLimit: 1_000) { _ in }
        #expect(consumer.offer(push(1, bytes: 600)) == .accepted)
        #expect(consumer.offer(push(2, bytes: 400)) == .accepted)
        #expect(consumer.offer(push(3, bytes: 1)) == .refused)
        #expect(consumer.offer(push(0, bytes: 1)) == .refused)
        #expect(consumer.count == 2)
        #expect(await consumer.next()?.seq == 1)
        #expect(consumer.offer(push(3, bytes: 600)) == .accepted)
        #expect(await consumer.next()?.seq == 2)
        #expect(await consumer.next()?.seq == 3)
        // Larger than the bound, into an empty buffer: taken, so that it can ever be delivered.
        #expect(consumer.offer(push(4, bytes: 5_000)) == .accepted)
        #expect(consumer.offer(push(5, bytes: 1)) == .refused)
    }

    @Test func pushesHeldWhileNobodyListensAreBoundedInBytes() {
        var machine = PushLedger<Void>.testing(holdLimit: 100, holdByteLimit: 1_000)
        #expect(machine.received(push(1, bytes: 700)).delivery == .held)
        #expect(machine.received(push(2, bytes: 400)).delivery == .dropDeferred)
        #expect(machine.syncWanted)
        #expect(machine.received(push(3, bytes: 300)).delivery == .held)
        #expect(machine.heldBytes == 1_000)
        let added = machine.consumerAdded((), id: 1, filter: TopicFilter(nil))
        #expect(added.pushes.map(\.seq) == [1, 3] && added.sync)
        #expect(machine.heldBytes == 0)
    }
}
