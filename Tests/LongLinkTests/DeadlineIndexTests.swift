import LongLinkTestSupport
import Testing

@testable import LongLink

@Suite("Deadline index", .sharedMachine)
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

    /// With a limit, a pop hands back the earliest due entries only, and the next pops the rest:
    /// slices of a mass expiry lose and repeat nothing.
    @Test func aLimitedPopTakesTheEarliestAndLeavesTheRest() {
        let origin = ContinuousClock.now
        var index = DeadlineIndex(origin: origin)
        for id in UInt64(1)...2_500 {
            // Ids 1...2,500 due in the reverse order, the last one not yet due.
            index.insert(id, deadline: origin.advanced(by: .microseconds(Int64(2_500 - id))))
        }
        let now = origin.advanced(by: .microseconds(2_498))
        let first = index.popDue(at: now, limit: 1_024)
        #expect(first == Array((2_500 - 1_023...2_500).reversed()))
        let second = index.popDue(at: now, limit: 1_024)
        #expect(second == Array((2_500 - 2_047...2_500 - 1_024).reversed()))
        let third = index.popDue(at: now, limit: 1_024)
        #expect(third == Array((2...2_500 - 2_048).reversed()))
        #expect(index.entryCount == 1 && index.earliest == origin.advanced(by: .microseconds(2_499)))
    }
}
