/// The client's decisions about pushes: which consumers get one, which are duplicates, what is
/// held while nobody listens, when a reliable seq is acknowledged, and when to ask for `Sync`.
///
/// A plain value: each method is an event and returns what the core must do; the core owns the
/// consumers' buffers, the link and the ack timer. Every reliable seq the client holds and the app
/// has not fully taken has one entry in `seqs`; seqs the app has taken are in `delivered`.
struct PushDelivery {
    /// Where one reliable seq is, from its arrival until every consumer that got it took it.
    enum SeqState: Equatable {
        /// No consumer for its topic yet: held here, in arrival order.
        case held
        /// In `holders` consumers' buffers; `taken` once one of them handed it to the app.
        case buffered(holders: Int, taken: Bool)
    }

    private(set) var consumers: [UInt64: String?] = [:]
    private(set) var seqs: [UInt64: SeqState] = [:]
    private(set) var held: [Push] = []
    private(set) var delivered = PushDeduplicator()
    /// A consumer was full: reliable pushes are refused (the server keeps them) until it catches up.
    private(set) var deferring = false
    /// A `Sync` is owed as soon as the link allows it.
    private(set) var syncWanted = false
    let holdLimit: Int

    init(holdLimit: Int) {
        self.holdLimit = holdLimit
    }

    /// The one topic rule: a consumer that wants `topic` (nil for every topic) takes `push`.
    static func consumer(wanting topic: String?, takes push: Push) -> Bool {
        topic == nil || topic == push.topic
    }

    /// True when some consumer takes `push`.
    func hasConsumer(for push: Push) -> Bool {
        consumers.values.contains { Self.consumer(wanting: $0, takes: push) }
    }

    // MARK: Events

    enum ReceiveAction: Equatable {
        /// Offer it to every consumer whose topic matches, then report with
        /// ``offered(_:accepted:refused:)``.
        case offer
        /// Held until a consumer for its topic arrives.
        case held
        /// The app has it already (an earlier Ack was lost): acknowledge it again, deliver nothing.
        case ackAgain
        /// A consumer holds it already (a redelivery after Sync): drop it.
        case dropDuplicate
        /// Left with the server, unacknowledged: a later `Sync` brings it again.
        case dropDeferred
        /// A best-effort push nobody listens to.
        case dropUnwanted
    }

    mutating func received(_ push: Push) -> ReceiveAction {
        let wanted = hasConsumer(for: push)
        guard push.isReliable else { return wanted ? .offer : .dropUnwanted }
        if delivered.wasDelivered(push.seq) { return .ackAgain }
        if seqs[push.seq] != nil { return .dropDuplicate }
        if deferring { return .dropDeferred }
        guard wanted else {
            guard held.count < holdLimit else {
                syncWanted = true
                return .dropDeferred
            }
            held.append(push)
            seqs[push.seq] = .held
            return .held
        }
        return .offer
    }

    /// How an offer went: `accepted` consumers took it into their buffers; `refused` when a live
    /// consumer's buffer was full. True when that starts deferring reliable pushes.
    mutating func offered(_ push: Push, accepted: Int, refused: Bool) -> Bool {
        if push.isReliable, accepted > 0 {
            seqs[push.seq] = .buffered(holders: accepted, taken: false)
        }
        guard push.isReliable, refused, !deferring else { return false }
        deferring = true
        return true
    }

    struct TakenAction: Equatable {
        /// Seqs to acknowledge now (every consumer that got them has taken them).
        var ack: [UInt64] = []
        /// Deferring ended: ask the server for what it kept.
        var sync = false
    }

    /// A consumer handed `taken` to the app. `caughtUp` when every consumer's buffer is below half
    /// full (deferring may end).
    mutating func taken(_ taken: [UInt64], caughtUp: Bool) -> TakenAction {
        var action = TakenAction()
        for seq in taken {
            guard case .buffered(let holders, _) = seqs[seq] else { continue }
            if holders > 1 {
                seqs[seq] = .buffered(holders: holders - 1, taken: true)
            } else {
                seqs[seq] = nil
                delivered.markDelivered(seq)
                action.ack.append(seq)
            }
        }
        if deferring, caughtUp {
            deferring = false
            action.sync = true
        }
        return action
    }

    struct ConsumerAdded: Equatable {
        /// Held pushes for it, in order: offer them, then report each with ``offered(_:accepted:refused:)``.
        var pushes: [Push] = []
        /// A `Sync` was owed for pushes nobody could take before.
        var sync = false
    }

    mutating func consumerAdded(_ id: UInt64, topic: String?) -> ConsumerAdded {
        consumers[id] = topic
        var added = ConsumerAdded()
        held.removeAll { push in
            guard Self.consumer(wanting: topic, takes: push) else { return false }
            added.pushes.append(push)
            seqs[push.seq] = nil
            return true
        }
        added.sync = syncWanted
        return added
    }

    struct ConsumerRemoved: Equatable {
        /// Seqs now fully taken by the consumers that remain: acknowledge them.
        var ack: [UInt64] = []
        /// Ask the server again for what the consumer never took: a consumer that wants it is
        /// registered. Otherwise a `Sync` is owed until one arrives.
        var sync = false
    }

    /// A consumer left; `untaken` are the reliable pushes in its buffer that it never handed over.
    mutating func consumerRemoved(_ id: UInt64, untaken: [Push]) -> ConsumerRemoved {
        guard consumers.removeValue(forKey: id) != nil else { return ConsumerRemoved() }
        var removed = ConsumerRemoved()
        var lost: [Push] = []
        for push in untaken {
            guard case .buffered(let holders, let taken) = seqs[push.seq] else { continue }
            if holders > 1 {
                seqs[push.seq] = .buffered(holders: holders - 1, taken: taken)
            } else if taken {
                // Everyone else who got it took it: the app has it.
                seqs[push.seq] = nil
                delivered.markDelivered(push.seq)
                removed.ack.append(push.seq)
            } else {
                // Nobody took it: it is the server's again.
                seqs[push.seq] = nil
                lost.append(push)
            }
        }
        guard !lost.isEmpty else { return removed }
        if lost.contains(where: { hasConsumer(for: $0) }) {
            removed.sync = true
        } else {
            syncWanted = true
        }
        return removed
    }

    /// A `Sync` is owed; the core sends one when the link is logged in.
    mutating func wantSync() {
        syncWanted = true
    }

    /// A `Sync` went out.
    mutating func syncSent() {
        syncWanted = false
    }

    /// The client stopped: every consumer is gone and nothing is held.
    mutating func removeAll() {
        consumers.removeAll()
        seqs.removeAll()
        held.removeAll()
    }
}
