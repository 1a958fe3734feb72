import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Offline queue")
struct OfflineQueueTests {
    /// Random appends, removals of ended calls, pops and resends against an array model: the queue
    /// gives the calls back in the model's order, and never holds more slots than twice its calls.
    @Test(arguments: [1 as UInt64, 2, 3])
    func behavesLikeAnArrayAndStaysCompact(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var queue = OfflineQueue()
        var model: [PendingCall] = []
        var nextID: UInt64 = 0
        for _ in 0..<20_000 {
            switch random.next(below: 10) {
            case 0..<4:
                nextID += 1
                let new = testCall(nextID)
                queue.append(new)
                model.append(new)
            case 4..<7 where !model.isEmpty:
                // A call ends while it waits (timed out, cancelled): anywhere in the queue.
                let ended = model.remove(at: random.next(below: model.count))
                queue.remove(ended)
                queue.remove(ended)  // ignored the second time
            case 7..<9:
                let popped = queue.popFirst()
                #expect(popped === model.first)
                if !model.isEmpty { model.removeFirst() }
            default:
                // A reconnect puts calls written on the lost link in front.
                let resend = (0..<random.next(below: 4)).map { _ in
                    nextID += 1
                    return testCall(nextID)
                }
                queue.prepend(resend)
                model.insert(contentsOf: resend, at: 0)
            }
            #expect(queue.count == model.count)
            #expect(queue.slotCount <= max(1, 2 * model.count))
        }
        var drained: [PendingCall] = []
        while let next = queue.popFirst() { drained.append(next) }
        #expect(drained.map(\.id) == model.map(\.id))
        #expect(queue.isEmpty && queue.slotCount == 0)
    }

    @Test func anEndedCallIsReleasedAtOnceWhereverItWaits() {
        var queue = OfflineQueue()
        let first = testCall(1)
        let last = testCall(3)
        queue.append(first)
        weak var middle: PendingCall?
        do {
            let ended = testCall(2)
            middle = ended
            queue.append(ended)
            queue.append(last)
            queue.remove(ended)
        }
        #expect(middle == nil)
        #expect(queue.count == 2)
        #expect(queue.popFirst() === first)
        #expect(queue.popFirst() === last)
        #expect(queue.popFirst() == nil)
    }
}
