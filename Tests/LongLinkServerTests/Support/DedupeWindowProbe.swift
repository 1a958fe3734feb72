import LongLinkWire

@testable import LongLinkServer

/// Drives the internal `DedupeWindow` with short strings for keys and actions.
struct DedupeWindowProbe {
    private var window: DedupeWindow<Int>
    private(set) var lastRun: DedupeWindow<Int>.Run?

    init(window: Duration, capacity: Int, capacityPerClient: Int? = nil) {
        self.window = DedupeWindow(window: window, capacity: capacity, capacityPerClient: capacityPerClient ?? capacity)
    }

    init(window: Duration = .seconds(100), limits: DedupeLimits) {
        self.window = DedupeWindow(window: window, limits: limits)
    }

    var count: Int { window.count }
    var storedBytes: Int { window.storedBytes }
    var refusals: Int { window.refusals }
    var repliesNotKept: Int { window.repliesNotKept }
    var bookkeepingRecords: Int { window.bookkeepingRecords }

    private func key(_ id: String, client: String = "c", principal: String? = nil) -> DedupeWindow<Int>.Key {
        .init(clientID: client, principal: principal, requestID: id)
    }

    /// "execute", "wait", "replay <payload>" (with " bound <principal>" when the execution bound
    /// one), "conflict <method>", or "refuse <message>"; a stored status reads "replay !<code>".
    mutating func arrive(
        _ id: String, client: String = "c", principal: String? = nil, method: String = "", waiter: Int,
        now: ContinuousClock.Instant
    ) -> String {
        switch window.arrive(key(id, client: client, principal: principal), method: method, waiter: waiter, now: now) {
        case .execute(let run):
            lastRun = run
            return "execute"
        case .wait: return "wait"
        case .replay(let response, let binding):
            let text =
                if let status = response.status { "!\(status.code)" } else {
                    String(decoding: response.payload, as: UTF8.self)
                }
            return "replay " + text + (binding.map { " bound \($0.principal ?? "-")" } ?? "")
        case .conflict(let method): return "conflict " + method
        case .refuse(let status): return "refuse \(status.code) " + status.message
        }
    }

    /// Finishes `run`, or the last run started.
    mutating func finish(_ id: String, run: DedupeWindow<Int>.Run? = nil, text: String, now: ContinuousClock.Instant)
        -> [Int]
    {
        guard let run = run ?? lastRun else { return [] }
        return Array(window.finish(run, response: Frame.Response(payload: Array(text.utf8)), now: now))
    }

    /// Records that the last run bound its connection to `principal`.
    mutating func bind(_ principal: String) {
        guard let lastRun else { return }
        window.bound(lastRun, to: StoredReply.Binding(principal: principal, exclusive: false))
    }

    /// Runs and finishes each of `ids` for `client`, each answered with its own id; false unless
    /// every one ran.
    mutating func store(_ ids: [String], client: String, principal: String? = nil, now: ContinuousClock.Instant)
        -> Bool
    {
        var ran = true
        for id in ids {
            ran = arrive(id, client: client, principal: principal, waiter: 0, now: now) == "execute" && ran
            _ = finish(id, text: id, now: now)
        }
        return ran
    }

    mutating func abandon(_ id: String) -> [Int] {
        guard let lastRun else { return [] }
        return Array(window.abandon(lastRun))
    }

    mutating func removeWaiter(_ id: String, _ waiter: Int) -> Bool {
        window.removeWaiter(key(id)) { $0 == waiter }
    }
}
