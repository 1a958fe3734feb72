import LongLinkTestSupport
import Testing

@testable import LongLinkTransport

/// The event loop's timer heap against a plain model (a list sorted by deadline, then id) under
/// random inserts, cancellations and expiries, with many equal deadlines.
///
/// Serialized: its loops are CPU-bound, so its cases run one at a time (each yielding, see `Pacer`)
/// rather than all at once queueing ahead of every other test's work on the two cooperative threads.
@Suite("Timer heap", .sharedMachine, .serialized)
struct TimerHeapTests {
    private struct Model {
        var timers: [(deadline: UInt64, id: UInt64)] = []

        mutating func popExpired(now: UInt64) -> UInt64? {
            guard let index = timers.indices.min(by: { Self.less(timers[$0], timers[$1]) }),
                timers[index].deadline <= now
            else { return nil }
            return timers.remove(at: index).id
        }

        static func less(_ a: (deadline: UInt64, id: UInt64), _ b: (deadline: UInt64, id: UInt64)) -> Bool {
            a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
        }
    }

    @Test(arguments: [1, 2, 3, 4])
    func matchesASortedModel(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var heap = TimerHeap()
        var model = Model()
        var nextID: UInt64 = 1
        var now: UInt64 = 0
        var fired: [UInt64] = []
        let firedBox = FiredBox()
        var pacer = Pacer()
        for _ in 0..<3_000 {
            await pacer.yieldIfDue()
            switch random.next() % 10 {
            case 0..<5:
                // Few distinct deadlines, so that many timers share one.
                let deadline = now + random.next() % 8
                let id = nextID
                nextID += 1
                heap.insert(TimerHeap.Entry(deadline: deadline, id: id, work: { firedBox.record(id) }))
                model.timers.append((deadline, id))
            case 5..<7:
                guard nextID > 1 else { continue }
                let id = 1 + random.next() % (nextID - 1)
                let inModel = model.timers.firstIndex { $0.id == id }
                let removed = heap.remove(id: id)
                #expect(removed == (inModel != nil))
                if let inModel { model.timers.remove(at: inModel) }
            case 7..<9:
                let expected = model.popExpired(now: now)
                let entry = heap.popExpired(now: now)
                #expect(entry?.id == expected)
                if let entry {
                    entry.work()
                    fired.append(entry.id)
                }
            default:
                now += 1
            }
            if heap.count != model.timers.count || heap.earliestDeadline != model.timers.map(\.deadline).min() {
                let earliest = String(describing: heap.earliestDeadline)
                Issue.record("count \(heap.count) or earliest deadline \(earliest) differs from the model")
                return
            }
        }
        // Drain what is left, in order.
        now += 100
        while let expected = model.popExpired(now: now) {
            let entry = heap.popExpired(now: now)
            #expect(entry?.id == expected)
            entry?.work()
            fired.append(expected)
        }
        #expect(heap.isEmpty)
        let none = heap.popExpired(now: .max)
        #expect(none == nil)
        // Each entry carried its own closure.
        #expect(firedBox.ids == fired)
    }

    @Test func manyTimersWithOneDeadlineFireInScheduleOrderAndCancelledOnesDoNot() {
        var heap = TimerHeap()
        for id in UInt64(1)...10_000 { heap.insert(TimerHeap.Entry(deadline: 500, id: id, work: {})) }
        var removed = 0
        for id in stride(from: UInt64(2), through: 10_000, by: 2) where heap.remove(id: id) { removed += 1 }
        #expect(removed == 5_000)
        let again = heap.remove(id: 2)
        #expect(!again)
        let early = heap.popExpired(now: 499)
        #expect(early == nil)
        var order: [UInt64] = []
        while let entry = heap.popExpired(now: 500) { order.append(entry.id) }
        #expect(order == Array(stride(from: UInt64(1), through: 9_999, by: 2)))
        // Reusable after the burst.
        heap.insert(TimerHeap.Entry(deadline: 7, id: 20_000, work: {}))
        #expect(heap.earliestDeadline == 7)
        let last = heap.popExpired(now: 7)
        #expect(last?.id == 20_000)
    }
}

private final class FiredBox: @unchecked Sendable {
    // Only the test's own task touches it (on whichever thread it resumes after a yield).
    var ids: [UInt64] = []
    func record(_ id: UInt64) { ids.append(id) }
}
