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
    /// The budgets of the model runs: small, so that every bound is met often.
    static let limits: DedupeLimits = {
        var limits = DedupeLimits()
        limits.entries = 40
        limits.entriesPerPrincipal = 30
        limits.entriesPerClient = 18
        limits.bytes = 700
        limits.bytesPerPrincipal = 450
        limits.bytesPerClient = 260
        return limits
    }()

    /// Thousands of random arrivals, finishes, abandons and waiter removals on a small key space
    /// with small budgets, so that the index grows, evicts and shifts buckets back constantly, and
    /// requests are refused and replies kept as markers; every answer must match a plain
    /// dictionary model of the same rules.
    @Test(arguments: [1, 2, 3, 4])
    func randomOperationsMatchTheModel(seed: UInt64) async {
        var random = SplitMix64(seed: seed)
        var window = DedupeWindow<Int>(window: .seconds(5), limits: Self.limits)
        var model = DedupeModel(window: .seconds(5), limits: Self.limits)
        var running: [(id: String, run: DedupeWindow<Int>.Run, model: UInt64)] = []
        var now = ContinuousClock.now
        var waiter = 0
        var pacer = Pacer()
        // Three clients of one principal and one of another, so that each budget is met.
        let clients: [(String, String)] = [("c", "p"), ("d", "p"), ("e", "p"), ("c", "q")]
        for step in 0..<20_000 {
            await pacer.yieldIfDue()
            // Time moves in jumps of up to 50 ms, so that entries also expire.
            now = now.advanced(by: .milliseconds(Int64(random.next(below: 50))))
            let id = "r\(random.next(below: 120))"
            let (client, principal) = clients[random.next(below: clients.count)]
            let key = DedupeKey(clientID: client, principal: principal, requestID: id)
            switch random.next(below: 10) {
            case 0..<5:
                waiter += 1
                let got = window.arrive(key, waiter: waiter, now: now)
                let want = model.arrive(key, waiter: waiter, now: now)
                switch (got, want) {
                case (.execute(let run), .execute(let generation)):
                    running.append((id, run, generation))
                case (.wait, .wait): break
                case (.replay(let a, _), .replay(let b)): #expect(a == b, "step \(step)")
                case (.refuse(let status), .refuse): #expect(status.code == .resourceExhausted, "step \(step)")
                default: Issue.record("step \(step): \(got) but the model says \(want)")
                }
            case 5..<8 where !running.isEmpty:
                let victim = running.remove(at: random.next(below: running.count))
                // Payloads on both sides of what a stored reply keeps inline, some with a status,
                // some too large for a client's bytes.
                let size =
                    random.next(below: 8) == 0
                    ? random.next(below: 300) : random.next(below: 2 * StoredReply.inlineCapacity + 2)
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
            #expect(window.storedBytes == model.storedBytes, "step \(step)")
            #expect(window.count <= Self.limits.entries && window.storedBytes <= Self.limits.bytes, "step \(step)")
        }
        // Every bound was met along the way.
        #expect(window.refusals > 0 && window.repliesNotKept > 0)
        #expect(window.refusals == model.refusals && window.repliesNotKept == model.repliesNotKept)
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
        case finished(Frame.Response, bytes: Int, expiresAt: ContinuousClock.Instant)
    }

    let window: Duration
    let limits: DedupeLimits
    var entries: [DedupeKey: Entry] = [:]
    var keys: [UInt64: DedupeKey] = [:]
    var order: [(key: DedupeKey, expiresAt: ContinuousClock.Instant)] = []
    var nextGeneration: UInt64 = 1
    var nextExpiry: ContinuousClock.Instant?
    var refusals = 0
    var repliesNotKept = 0

    init(window: Duration, limits: DedupeLimits) {
        self.window = window
        self.limits = limits
    }

    var count: Int { entries.count }

    /// Entries and stored bytes of the keys `matching`; finished entries alone with `finished`.
    func usage(finished: Bool = false, _ matching: (DedupeKey) -> Bool) -> (entries: Int, bytes: Int) {
        var result = (entries: 0, bytes: 0)
        for (key, entry) in entries where matching(key) {
            switch entry {
            case .running: if !finished { result.entries += 1 }
            case .finished(_, let bytes, _):
                result.entries += 1
                result.bytes += bytes
            }
        }
        return result
    }

    var storedBytes: Int { usage { _ in true }.bytes }

    func ofClient(_ client: DedupeKey.Client) -> (DedupeKey) -> Bool { { $0.client == client } }

    func ofPrincipal(_ client: DedupeKey.Client) -> (DedupeKey) -> Bool {
        { $0.client.principal == client.principal }
    }

    enum Action { case execute(UInt64), wait, replay(Frame.Response), refuse }

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
        case .finished(let response, _, let expiresAt)? where expiresAt > now:
            return .replay(response)
        case .finished?:
            return start(key, waiter: waiter)
        case nil:
            // Each entry budget, counting the new one; the client may give up its own finished
            // entries only, and gives up none when they would not be enough.
            let over = max(
                count + 1 - limits.entries, usage(ofClient(key.client)).entries + 1 - limits.entriesPerClient,
                usage(ofPrincipal(key.client)).entries + 1 - limits.entriesPerPrincipal)
            guard over <= usage(finished: true, ofClient(key.client)).entries else {
                refusals += 1
                return .refuse
            }
            for _ in 0..<max(0, over) { dropOldest(of: key.client) }
            return start(key, waiter: waiter)
        }
    }

    private mutating func start(_ key: DedupeKey, waiter: Int) -> Action {
        let generation = nextGeneration
        nextGeneration += 1
        entries[key] = .running(waiters: [waiter], generation: generation)
        keys[generation] = key
        return .execute(generation)
    }

    mutating func finish(_ generation: UInt64, response: Frame.Response, now: ContinuousClock.Instant) -> [Int] {
        guard let key = keys[generation], case .running(let waiters, generation)? = entries[key] else { return [] }
        let size = response.payload.count + (response.status?.message.utf8.count ?? 0)
        let own = usage(ofClient(key.client)).bytes
        var stored = (response, size)
        if size <= limits.bytesPerClient, usage(ofPrincipal(key.client)).bytes - own + size <= limits.bytesPerPrincipal,
            storedBytes - own + size <= limits.bytes
        {
            while usage(ofClient(key.client)).bytes + size > limits.bytesPerClient
                || usage(ofPrincipal(key.client)).bytes + size > limits.bytesPerPrincipal
                || storedBytes + size > limits.bytes
            {
                dropOldest(of: key.client)
            }
        } else {
            stored = (StoredReply.notKept.response, 0)
            repliesNotKept += 1
        }
        let expiresAt = now.advanced(by: window)
        entries[key] = .finished(stored.0, bytes: stored.1, expiresAt: expiresAt)
        order.append((key, expiresAt))
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

    /// Removes the oldest finished entry of `client` (records of entries gone or run again since
    /// are dropped on the way).
    mutating func dropOldest(of client: DedupeKey.Client) {
        while let index = order.firstIndex(where: { $0.key.client == client }) {
            let (key, expiresAt) = order.remove(at: index)
            if case .finished(_, _, let current)? = entries[key], current == expiresAt {
                entries[key] = nil
                return
            }
        }
    }

    mutating func drop() {
        let (key, expiresAt) = order.removeFirst()
        if case .finished(_, _, let current)? = entries[key], current == expiresAt { entries[key] = nil }
    }
}
