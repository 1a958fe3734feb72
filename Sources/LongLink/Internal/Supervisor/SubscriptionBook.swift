/// The subscriptions the client keeps entered: the configuration's static ones and those the app
/// made at run time (``LongLinkClient/subscribe(_:timeout:)``), in the order they were made.
///
/// A plain value the core asks and obeys. Every send is tagged with the link generation it went
/// out on, so an outcome from a link that was replaced meanwhile changes nothing but the first
/// reply its caller waits for. Replays that fail for a reason of their own (the server refused,
/// the deadline passed) are reported and retried with the link's backoff; a link that drops
/// loses nothing, as the next login replays every subscription.
struct SubscriptionBook {
    /// The most subscriptions kept at once (static ones included).
    static let limit = 10_000

    struct Entry {
        let id: UInt64
        let method: String
        let payload: [UInt8]
        /// Sent when the app ends the subscription, once it was entered.
        let leave: Subscription?
        /// The generation of the link the latest send went out on.
        var sentOn: UInt64?
        /// Whether the server answered a send once: until then the subscription's caller waits
        /// for its first reply, and a refusal ends the subscription instead of being retried.
        var entered: Bool
        /// Failed replays in a row.
        var failures = 0
        /// When a failed replay goes again on the open link.
        var retryAt: ContinuousClock.Instant?
        /// One of the configuration's: replayed for every principal, never ended.
        var isStatic = false
    }

    /// One request to send on `generation`.
    struct Send: Equatable {
        let id: UInt64
        let method: String
        let payload: [UInt8]
        let generation: UInt64
    }

    enum OutcomeAction {
        /// Hand the first reply to the caller of `subscribe`.
        case resolveFirst([UInt8])
        /// The first send was refused: fail the caller of `subscribe` (the subscription is gone).
        case failFirst(LongLinkError)
        /// A replay's reply, for the handle.
        case replayed([UInt8])
        /// A replay failed: report it on the handle; it goes again at `retryAt`.
        case replayFailed(LongLinkError, retryAt: ContinuousClock.Instant)
        /// Nothing to do: a stale outcome, a dropped link (the next login replays), a subscription
        /// ended meanwhile.
        case none
    }

    private(set) var entries: [UInt64: Entry] = [:]
    private var nextID: UInt64 = 0
    let backoff: Backoff

    /// The book with the configuration's static subscriptions, entered as far as the book is
    /// concerned: a refused replay of theirs is retried, never the end of them.
    init(static subscriptions: [Subscription], backoff: Backoff) {
        self.backoff = backoff
        for subscription in subscriptions.prefix(Self.limit) {
            let id = take()
            entries[id] = Entry(
                id: id, method: subscription.method, payload: subscription.payload, leave: nil, entered: true,
                isStatic: true)
        }
    }

    var count: Int { entries.count }

    private mutating func take() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    /// Registers a run-time subscription; it goes out with the next ``due(now:open:)`` or login.
    mutating func add(method: String, payload: [UInt8], leave: Subscription?) throws(LongLinkError) -> UInt64 {
        guard entries.count < Self.limit else {
            throw LongLinkError(
                code: .resourceExhausted, message: "the client keeps \(Self.limit) subscriptions at most")
        }
        let id = take()
        entries[id] = Entry(id: id, method: method, payload: payload, leave: leave, entered: false)
        return id
    }

    /// Ends a subscription. Returns its leave request when one is declared and the server may
    /// hold the subscription (it answered a send, or one is on the wire).
    mutating func remove(_ id: UInt64) -> Subscription? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        guard entry.entered || entry.sentOn != nil else { return nil }
        return entry.leave
    }

    /// The session ended: the run-time subscriptions were its principal's and go (their ids are
    /// returned); the static ones stay, as if never sent, with no failures counted against them.
    @discardableResult
    mutating func endSession() -> [UInt64] {
        let ended = entries.values.filter { !$0.isStatic }.map(\.id).sorted()
        for id in ended { entries[id] = nil }
        for id in entries.keys {
            entries[id]!.sentOn = nil
            entries[id]!.failures = 0
            entries[id]!.retryAt = nil
        }
        return ended
    }

    /// The login of `generation`: every subscription, in the order made, each once. Returns the
    /// ones not sent on `generation` yet (called again until empty, for those made meanwhile).
    mutating func replay(on generation: UInt64) -> [Send] {
        var sends: [Send] = []
        for id in entries.keys.sorted() where entries[id]?.sentOn != generation {
            sends.append(mark(id, sentOn: generation))
        }
        return sends
    }

    /// What goes out now on the open link (`open`, nil when none): subscriptions made since its
    /// login, and failed replays whose backoff has passed.
    mutating func due(now: ContinuousClock.Instant, open: UInt64?) -> [Send] {
        guard let open else { return [] }
        var sends: [Send] = []
        for id in entries.keys.sorted() {
            guard let entry = entries[id] else { continue }
            let isDue = entry.retryAt.map { $0 <= now } ?? (entry.sentOn != open)
            if isDue { sends.append(mark(id, sentOn: open)) }
        }
        return sends
    }

    /// The earliest retry waiting.
    var nextRetry: ContinuousClock.Instant? {
        entries.values.compactMap(\.retryAt).min()
    }

    private mutating func mark(_ id: UInt64, sentOn generation: UInt64) -> Send {
        entries[id]?.sentOn = generation
        entries[id]?.retryAt = nil
        let entry = entries[id]!
        return Send(id: id, method: entry.method, payload: entry.payload, generation: generation)
    }

    /// The outcome of the send of `id` on `generation`.
    mutating func outcome(
        _ id: UInt64, generation: UInt64, _ result: Result<[UInt8], LongLinkError>, now: ContinuousClock.Instant,
        random: Double
    ) -> OutcomeAction {
        guard var entry = entries[id] else { return .none }
        let current = entry.sentOn == generation
        switch result {
        case .success(let reply):
            if current {
                entry.failures = 0
                entry.retryAt = nil
            }
            let first = !entry.entered
            entry.entered = true
            entries[id] = entry
            if first { return .resolveFirst(reply) }
            return current ? .replayed(reply) : .none
        case .failure(let error):
            // The link went away under it: the next login sends it again.
            guard current, !Self.isLinkLoss(error) else { return .none }
            guard entry.entered else {
                entries[id] = nil
                return .failFirst(error)
            }
            entry.failures += 1
            let retryAt = now.advanced(by: backoff.delay(forAttempt: entry.failures - 1, random: random))
            entry.retryAt = retryAt
            entries[id] = entry
            return .replayFailed(error, retryAt: retryAt)
        }
    }

    /// Failures that say nothing about the subscription: its link dropped or the client stops.
    static func isLinkLoss(_ error: LongLinkError) -> Bool {
        [.connectionLost, .outcomeUnknown, .connectionReset, .connectionClosed, .shutdown, .cancelled]
            .contains(error.code)
    }
}
