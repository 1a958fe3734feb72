import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Offline queue", .sharedMachine)
struct OfflineQueueTests {
    /// Random appends, removals of ended requests, pops and resends against an array model: the
    /// queue gives the ids back in the model's order, and its slots stay within twice its requests
    /// (plus a small constant).
    @Test(arguments: [1 as UInt64, 2, 3])
    func behavesLikeAnArrayAndStaysCompact(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var queue = OfflineQueue()
        var model: [UInt64] = []
        var nextID: UInt64 = 0
        for _ in 0..<20_000 {
            switch random.next(below: 10) {
            case 0..<4:
                nextID += 1
                queue.append(nextID)
                model.append(nextID)
            case 4..<7 where !model.isEmpty:
                // A request ends while it waits (timed out, cancelled): anywhere in the queue.
                let ended = model.remove(at: random.next(below: model.count))
                let first = queue.remove(ended)
                let second = queue.remove(ended)  // ignored the second time
                #expect(first && !second)
            case 7..<9:
                let popped = queue.popFirst()
                #expect(popped == model.first)
                if !model.isEmpty { model.removeFirst() }
            default:
                // A reconnect puts requests written on the lost link in front.
                let resend = (0..<random.next(below: 4)).map { _ in
                    nextID += 1
                    return nextID
                }
                queue.prepend(resend)
                model.insert(contentsOf: resend, at: 0)
            }
            #expect(queue.count == model.count)
            #expect(queue.slotCount <= 2 * model.count + 33)
        }
        var drained: [UInt64] = []
        while let next = queue.popFirst() { drained.append(next) }
        #expect(drained == model)
        #expect(queue.isEmpty && queue.slotCount == 0)
    }

    @Test func removeAllHandsBackTheWaitingInOrder() {
        var queue = OfflineQueue()
        for id in 1...5 as ClosedRange<UInt64> { queue.append(id) }
        queue.remove(2)
        queue.prepend([9])
        #expect(queue.removeAll() == [9, 1, 3, 4, 5])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
    }
}
