import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Pending table")
struct PendingTableTests {
    /// Random inserts, removals and lookups against a dictionary, with ids that collide on purpose
    /// (the same id plus multiples of the capacity) as well as the usual consecutive ones.
    @Test(arguments: [1 as UInt64, 2, 3, 4])
    func behavesLikeADictionary(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var table = PendingTable()
        var model: [UInt64: PendingCall] = [:]
        var nextID: UInt64 = 1 << 40
        for step in 0..<20_000 {
            let roll = random.next(below: 10)
            if roll < 5 || model.isEmpty {
                // Mostly the next id; sometimes one that shares a home slot with a live call.
                let id: UInt64
                if roll == 0, let live = model.keys.randomElement(using: &random) {
                    id = live &+ UInt64(table.capacity) &* UInt64(1 + random.next(below: 3))
                } else {
                    nextID += 1
                    id = nextID
                }
                guard model[id] == nil else { continue }
                let new = testCall(id)
                table.insert(new)
                model[id] = new
            } else if roll < 9 {
                let id = model.keys.randomElement(using: &random)!
                table.remove(model.removeValue(forKey: id)!)
            } else {
                // Unknown ids find nothing (the server may send any id), including ids that share a
                // live call's home slot. Bit 62 is never set in an id the test inserts.
                let live = model.keys.randomElement(using: &random)!
                #expect(table.call(for: live | (1 << 62)) == nil)
                #expect(table.call(for: random.next() | (1 << 62)) == nil)
            }
            #expect(table.count == model.count)
            if step % 500 == 0 {
                for (id, expected) in model { #expect(table.call(for: id) === expected) }
                #expect(Set(table.all.map(\.id)) == Set(model.keys))
                await Task.yield()
            }
        }
        for (id, expected) in model {
            #expect(table.call(for: id) === expected)
            table.remove(expected)
            #expect(table.call(for: id) == nil)
            #expect(expected.pendingSlot == -1)
        }
        #expect(table.isEmpty)
    }

    /// A counter's ids each get their own slot: no probing, and a hostile reply's lookup stops at once.
    @Test func consecutiveIdsNeverCollide() {
        var table = PendingTable()
        let calls = (0..<100_000 as Range<UInt64>).map { testCall((1 << 45) + $0) }
        for call in calls { table.insert(call) }
        #expect(table.maxDisplacement == 0)
        #expect(table.call(for: 7) == nil)
        #expect(table.call(for: (1 << 45) + 99_999) === calls.last)
        // Removing in any order keeps every other call reachable.
        for call in calls where call.id % 2 == 0 { table.remove(call) }
        #expect(calls.allSatisfy { $0.id % 2 == 0 ? table.call(for: $0.id) == nil : table.call(for: $0.id) === $0 })
        #expect(table.count == 50_000)
    }

    /// After a burst the table gives its memory back as new calls arrive.
    @Test func shrinksAfterABurst() {
        var table = PendingTable()
        let calls = (0..<100_000 as Range<UInt64>).map { testCall($0) }
        for call in calls { table.insert(call) }
        let burstCapacity = table.capacity
        #expect(burstCapacity >= 200_000)
        for call in calls.dropFirst(10) { table.remove(call) }
        for id in 100_000..<100_010 as Range<UInt64> { table.insert(testCall(id)) }
        #expect(table.capacity <= 4_096)
        #expect(calls.prefix(10).allSatisfy { table.call(for: $0.id) === $0 })
        #expect(table.count == 20)
    }

    /// A count that swings below a small table's size does not make it rehash back and forth.
    @Test func keepsItsSizeUnderASteadyLoad() {
        var table = PendingTable()
        var nextID: UInt64 = 0
        var live: [PendingCall] = []
        func fill(to count: Int) {
            while live.count < count {
                let new = testCall(nextID)
                nextID += 1
                table.insert(new)
                live.append(new)
            }
        }
        fill(to: 1_024)
        let steadyCapacity = table.capacity
        for _ in 0..<100 {
            for call in live.prefix(1_000) { table.remove(call) }
            live.removeFirst(1_000)
            fill(to: 1_024)
            #expect(table.capacity == steadyCapacity)
        }
    }

    /// Removing a call that is not (or no longer) in the table changes nothing.
    @Test func removingAStrangerIsHarmless() {
        var table = PendingTable()
        let member = testCall(5)
        table.insert(member)
        table.remove(testCall(5))
        table.remove(member)
        table.remove(member)
        #expect(table.isEmpty)
        #expect(table.call(for: 5) == nil)
    }
}
