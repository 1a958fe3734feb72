import LongLinkTestSupport
import LongLinkWire
import Testing

@testable import LongLinkServer

/// Serialized: its loops are CPU-bound, so its cases run one at a time (each yielding, see `Pacer`)
/// rather than all at once queueing ahead of every other test's work on the two cooperative threads.
@Suite("DedupeWindow against a reference model", .sharedMachine, .serialized)
struct DedupeWindowModelTests {
    /// Thousands of random arrivals, finishes, abandons and waiter removals on a small key space
    /// with a small capacity, so that the index grows, evicts and shifts buckets back constantly;
    /// every answer must match a plain dictionary model of the same rules.
    @Test(arguments: [1, 2, 3, 4])
    func randomOperationsMatchTheModel(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var window = DedupeWindow<Int>(window: .seconds(5), capacity: 40, capacityPerClient: 25)
        var model = DedupeModel(window: .seconds(5), capacity: 40, capacityPerClient: 25)
        var running: [(id: String, run: DedupeWindow<Int>.Run, model: UInt64)] = []
        var now = ContinuousClock.now
        var waiter = 0
        var pacer = Pacer()
        for step in 0..<20_000 {
            await pacer.yieldIfDue()
            // Time moves in jumps of up to 50 ms, so that entries also expire.
            now = now.advanced(by: .milliseconds(Int64(random.next(below: 50))))
            let id = "r\(random.next(below: 120))"
            let key = DedupeKey(clientID: random.next(below: 4) == 0 ? "other" : "c", requestID: id)
            switch random.next(below: 10) {
            case 0..<5:
                waiter += 1
                let got = window.arrive(key, waiter: waiter, now: now)
                let want = model.arrive(key, waiter: waiter, now: now)
                switch (got, want) {
                case (.execute(let run), .execute(let generation)):
                    running.append((id, run, generation))
                case (.wait, .wait): break
                case (.replay(let a), .replay(let b)): #expect(a == b, "step \(step)")
                default: Issue.record("step \(step): \(got) but the model says \(want)")
                }
            case 5..<8 where !running.isEmpty:
                let victim = running.remove(at: random.next(below: running.count))
                // Payloads on both sides of what a stored reply keeps inline, some with a status.
                let size = random.next(below: 2 * StoredReply.inlineCapacity + 2)
                let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ step) }
                let status = random.next(below: 4) == 0 ? Frame.Status(code: .notFound, message: "s\(step)") : nil
                let response = Frame.Response(payload: payload, status: status)
                #expect(
                    Array(window.finish(victim.run, response: response, now: now))
                        == model.finish(victim.model, response: response, now: now), "step \(step)")
            case 8 where !running.isEmpty:
                let victim = running.remove(at: random.next(below: running.count))
                #expect(Array(window.abandon(victim.run)) == model.abandon(victim.model), "step \(step)")
            default:
                let gone = waiter - random.next(below: 10)
                #expect(
                    window.removeWaiter(key) { $0 == gone } == model.removeWaiter(key) { $0 == gone },
                    "step \(step)")
            }
            #expect(window.count == model.count, "step \(step)")
        }
    }

    /// An entry that expired but was not yet dropped runs again; the old run's expiry must not
    /// remove the new result.
    @Test func anExpiredEntryRunsAgainAndTheOldExpiryKeepsTheNewResult() {
        var window = DedupeWindowProbe(window: .microseconds(500), capacity: 10)
        let start = ContinuousClock.now
        #expect(window.arrive("a", waiter: 1, now: start) == "execute")
        #expect(window.finish("a", text: "old", now: start) == [1])
        // Past its expiry, before the next expiry sweep (at most once a millisecond).
        let later = start.advanced(by: .microseconds(600))
        #expect(window.arrive("a", waiter: 2, now: later) == "execute")
        #expect(window.finish("a", text: "new", now: later) == [2])
        // The sweep at 1 ms drops the first run's record, which must leave the second run alone.
        let sweep = start.advanced(by: .microseconds(1_050))
        #expect(window.arrive("b", waiter: 3, now: sweep) == "execute")
        #expect(window.arrive("a", waiter: 4, now: sweep) == "replay new")
    }
}

@Suite("DedupeKey", .sharedMachine)
struct DedupeKeyTests {
    @Test func equalIdsMakeEqualKeysWhicheverWayTheClientIsGiven() {
        let client = DedupeKey.Client("phone-1")
        let a = DedupeKey(client: client, requestID: "42")
        let b = DedupeKey(clientID: "phone-1", requestID: "42")
        #expect(a == b)
        #expect(a.hash == b.hash)
        #expect(a.hashValue == b.hashValue)
    }

    @Test func eitherIdTellsKeysApart() {
        let key = DedupeKey(clientID: "phone-1", requestID: "42")
        #expect(key != DedupeKey(clientID: "phone-2", requestID: "42"))
        #expect(key != DedupeKey(clientID: "phone-1", requestID: "43"))
        // The two ids are not simply concatenated.
        #expect(DedupeKey(clientID: "ab", requestID: "c") != DedupeKey(clientID: "a", requestID: "bc"))
    }
}

/// The window's rules on a plain dictionary, without the expiry throttle's shortcut: the
/// reference the slot-and-index implementation must agree with.
private struct DedupeModel {
    enum Entry {
        case running(waiters: [Int], generation: UInt64)
        case finished(Frame.Response, expiresAt: ContinuousClock.Instant)
    }

    let window: Duration
    let capacity: Int
    var entries: [DedupeKey: Entry] = [:]
    var keys: [UInt64: DedupeKey] = [:]
    var order: [(key: DedupeKey, expiresAt: ContinuousClock.Instant)] = []
    var nextGeneration: UInt64 = 1
    var nextExpiry: ContinuousClock.Instant?

    let capacityPerClient: Int

    init(window: Duration, capacity: Int, capacityPerClient: Int) {
        self.window = window
        self.capacity = capacity
        self.capacityPerClient = capacityPerClient
    }

    /// The finished entries of `client`.
    func finishedCount(of client: DedupeKey.Client) -> Int {
        entries.count { key, entry in
            guard key.client == client, case .finished = entry else { return false }
            return true
        }
    }

    var count: Int { entries.count }

    enum Action { case execute(UInt64), wait, replay(Frame.Response) }

    mutating func arrive(_ key: DedupeKey, waiter: Int, now: ContinuousClock.Instant) -> Action {
        if nextExpiry.map({ now >= $0 }) ?? true {
            while let first = order.first, first.expiresAt <= now { drop() }
            nextExpiry = now.advanced(by: .milliseconds(1))
        }
        switch entries[key] {
        case .running(var waiters, let generation)?:
            waiters.append(waiter)
            entries[key] = .running(waiters: waiters, generation: generation)
            return .wait
        case .finished(let response, let expiresAt)? where expiresAt > now:
            return .replay(response)
        default:
            let generation = nextGeneration
            nextGeneration += 1
            entries[key] = .running(waiters: [waiter], generation: generation)
            keys[generation] = key
            return .execute(generation)
        }
    }

    mutating func finish(_ generation: UInt64, response: Frame.Response, now: ContinuousClock.Instant) -> [Int] {
        guard let key = keys[generation], case .running(let waiters, generation)? = entries[key] else { return [] }
        let expiresAt = now.advanced(by: window)
        entries[key] = .finished(response, expiresAt: expiresAt)
        order.append((key, expiresAt))
        // Over its share, or over the capacity: the client's own oldest goes, never another's.
        while finishedCount(of: key.client) > capacityPerClient
            || (entries.count > capacity && finishedCount(of: key.client) > 0)
        {
            dropOldest(of: key.client)
        }
        return waiters
    }

    mutating func abandon(_ generation: UInt64) -> [Int] {
        guard let key = keys[generation], case .running(let waiters, generation)? = entries[key] else { return [] }
        entries[key] = nil
        return waiters
    }

    mutating func removeWaiter(_ key: DedupeKey, where matches: (Int) -> Bool) -> Bool {
        guard case .running(var waiters, let generation)? = entries[key] else { return false }
        waiters.removeAll(where: matches)
        entries[key] = .running(waiters: waiters, generation: generation)
        return waiters.isEmpty
    }

    mutating func dropOldest(of client: DedupeKey.Client) {
        for (index, (key, expiresAt)) in order.enumerated() where key.client == client {
            order.remove(at: index)
            if case .finished(_, let current)? = entries[key], current == expiresAt {
                entries[key] = nil
                return
            }
            dropOldest(of: client)
            return
        }
    }

    mutating func drop() {
        let (key, expiresAt) = order.removeFirst()
        if case .finished(_, let current)? = entries[key], current == expiresAt { entries[key] = nil }
    }
}
