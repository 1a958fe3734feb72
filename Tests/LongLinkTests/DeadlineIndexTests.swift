import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Deadline index")
struct DeadlineIndexTests {
    /// Random inserts (many sharing a deadline, some before the origin) and pops at a moving `now`
    /// against a sorted model: every pop hands back exactly the ids due, and `earliest` is the
    /// smallest deadline held.
    @Test(arguments: [1 as UInt64, 2, 3])
    func popsExactlyWhatIsDue(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let origin = ContinuousClock.now
        var index = DeadlineIndex(origin: origin)
        var model: [(deadline: Duration, id: UInt64)] = []
        var now = Duration.zero
        for id in UInt64(1)...20_000 {
            if random.next(below: 4) == 0 {
                now += .microseconds(random.next(below: 3_000))
                let due = index.popDue(at: origin.advanced(by: now))
                let expected = model.filter { $0.deadline <= now }.map(\.id)
                #expect(Set(due) == Set(expected) && due.count == expected.count)
                model.removeAll { $0.deadline <= now }
            }
            // Few distinct deadlines, so that many share one; a few lie before the origin.
            let deadline = now + .microseconds(random.next(below: 20) * 500) - .milliseconds(1)
            index.insert(id, deadline: origin.advanced(by: deadline))
            model.append((deadline, id))
            let earliest = model.map(\.deadline).min()!
            #expect(index.earliest == origin.advanced(by: earliest))
        }
        #expect(index.popDue(at: origin.advanced(by: now + .seconds(1))).count == model.count)
        #expect(index.earliest == nil && index.entryCount == 0)
    }
}
