/// The client's decisions about pushes: which consumers get one, which are duplicates, what is
/// held while nobody listens, when a reliable seq is acknowledged, and when to ask for `Sync`.
///
/// A plain value: each method is an event and returns what the core must do; the core owns the
/// consumers' buffers, the link and the ack timer. Every reliable push the client holds and the app
/// has not fully taken has one entry in `seqs`, keyed by (epoch, seq); seqs the app has taken are
/// in `delivered`, one de-duplicator per epoch for the few most recent epochs.
struct PushDelivery {
    /// Where one reliable seq is, from its arrival until every consumer that got it took it.
    enum SeqState: Equatable {
        /// No consumer for its topic yet: held here, in arrival order.
        case held
        /// In `holders` consumers' buffers; `taken` once one of them handed it to the app.
        case buffered(holders: Int, taken: Bool)
    }

    private(set) var consumers: [UInt64: String?] = [:]
    private(set) var seqs: [PushKey: SeqState] = [:]
    private(set) var held: [Push] = []
    /// The payload bytes of `held`.
    private(set) var heldBytes = 0
    /// The de-duplicators of the most recent epochs, in the order they were first seen.
    private(set) var delivered: [(epoch: UInt64, seqs: PushDeduplicator)] = []
    /// A consumer was full: reliable pushes are refused (the server keeps them) until it catches up.
    private(set) var deferring = false
    /// A `Sync` is owed as soon as the link allows it.
    private(set) var syncWanted = false
    /// A `Sync` went out on a link already receiving reliable pushes, and its redelivery has not
    /// begun yet (see ``RedeliveryWait``).
    private(set) var redeliveryWait: RedeliveryWait?
    let holdLimit: Int
    /// The most payload bytes held; a push always fits when nothing is held.
    let holdByteLimit: Int

    /// Epochs remembered: a client that moves between servers with different stores (and back)
    /// still drops the repeats of the last few.
    static let epochLimit = 4

    init(holdLimit: Int, holdByteLimit: Int = .max) {
        self.holdLimit = holdLimit
        self.holdByteLimit = holdByteLimit
    }

    /// True when the app has taken `key` before.
    func wasDelivered(_ key: PushKey) -> Bool {
        delivered.last(where: { $0.epoch == key.epoch })?.seqs.wasDelivered(key.seq) ?? false
    }

    private mutating func markDelivered(_ key: PushKey) {
        if let index = delivered.lastIndex(where: { $0.epoch == key.epoch }) {
            delivered[index].seqs.markDelivered(key.seq)
            return
        }
        var seqs = PushDeduplicator()
        seqs.markDelivered(key.seq)
        delivered.append((key.epoch, seqs))
        if delivered.count > Self.epochLimit { delivered.removeFirst() }
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

    /// A push arrived on the link of generation `link`.
    mutating func received(_ push: Push, on link: UInt64 = 0) -> ReceiveAction {
        let wanted = hasConsumer(for: push)
        guard push.isReliable else { return wanted ? .offer : .dropUnwanted }
        let stale = isStale(push, on: link)
        if wasDelivered(push.key) { return .ackAgain }
        if seqs[push.key] != nil { return .dropDuplicate }
        if stale {
            redeliveryWait?.dropped = true
            return .dropDeferred
        }
        if deferring { return .dropDeferred }
        guard wanted else {
            guard held.count < holdLimit, held.isEmpty || push.payload.count <= holdByteLimit - heldBytes else {
                syncWanted = true
                return .dropDeferred
            }
            held.append(push)
            heldBytes += push.payload.count
            seqs[push.key] = .held
            return .held
        }
        return .offer
    }

    /// How an offer went: `accepted` consumers took it into their buffers; `refused` when a live
    /// consumer's buffer was full. True when that starts deferring reliable pushes.
    mutating func offered(_ push: Push, accepted: Int, refused: Bool) -> Bool {
        if push.isReliable, accepted > 0 {
            seqs[push.key] = .buffered(holders: accepted, taken: false)
        }
        guard push.isReliable, refused, !deferring else { return false }
        deferring = true
        return true
    }

    struct TakenAction: Equatable {
        /// Pushes to acknowledge now (every consumer that got them has taken them).
        var ack: [PushKey] = []
        /// Deferring ended: ask the server for what it kept.
        var sync = false
    }

    /// A consumer handed `taken` to the app. `caughtUp` when every consumer's buffer is below half
    /// full (deferring may end).
    mutating func taken(_ taken: [PushKey], caughtUp: Bool) -> TakenAction {
        var action = TakenAction()
        for key in taken {
            guard case .buffered(let holders, _) = seqs[key] else { continue }
            if holders > 1 {
                seqs[key] = .buffered(holders: holders - 1, taken: true)
            } else {
                seqs[key] = nil
                markDelivered(key)
                action.ack.append(key)
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
            heldBytes -= push.payload.count
            seqs[push.key] = nil
            return true
        }
        added.sync = syncWanted
        return added
    }

    struct ConsumerRemoved: Equatable {
        /// Pushes now fully taken by the consumers that remain: acknowledge them.
        var ack: [PushKey] = []
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
            switch dropHolder(of: push.key) {
            case .stillHeld: break
            case .delivered: removed.ack.append(push.key)
            case .lost: lost.append(push)
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

    private enum HolderDropped {
        /// Other consumers still hold it.
        case stillHeld
        /// Everyone else who got it took it: the app has it, acknowledge it.
        case delivered
        /// Nobody took it: it is the server's again.
        case lost
    }

    /// One consumer that held `key` no longer does.
    private mutating func dropHolder(of key: PushKey) -> HolderDropped {
        guard case .buffered(let holders, let taken) = seqs[key] else { return .stillHeld }
        if holders > 1 {
            seqs[key] = .buffered(holders: holders - 1, taken: taken)
            return .stillHeld
        }
        seqs[key] = nil
        guard taken else { return .lost }
        markDelivered(key)
        return .delivered
    }

    /// A consumer took `push` out of its buffer but let it go without handing it to the app (it did
    /// not decode and nobody was there to see it): returns the key to acknowledge when the other
    /// consumers that got it took it. Otherwise it is the server's again, and comes back with a
    /// later `Sync`; none is asked for now, since the same consumer would let it go again.
    mutating func released(_ push: Push) -> PushKey? {
        guard push.isReliable else { return nil }
        return dropHolder(of: push.key) == .delivered ? push.key : nil
    }

    /// A `Sync` is owed; the core sends one when the link is logged in.
    mutating func wantSync() {
        syncWanted = true
    }

    /// The `Sync` of a login went out: the link is new, no push was sent on it before.
    mutating func syncSent() {
        syncWanted = false
        redeliveryWait = nil
    }

    /// A `Sync` went out on the logged-in link of generation `link`, followed by a `Ping` with
    /// nonce `barrier`; `epoch` and `lastSeq` are those of the last reliable push received there
    /// (nil: none yet). Reliable pushes on that link are dropped until the redelivery begins.
    mutating func resyncSent(on link: UInt64, epoch: UInt64?, lastSeq: UInt64?, barrier: UInt64) {
        syncWanted = false
        // An earlier wait ends here: this Sync's redelivery brings what it dropped as well.
        redeliveryWait = RedeliveryWait(link: link, barrier: barrier, epoch: epoch, last: lastSeq)
    }

    /// The `Pong` with `nonce` arrived. True when a `Sync` must go out again: it answered the
    /// wait's `Ping`, so everything the server sent before it read the `Sync` has arrived, and
    /// pushes were dropped with no sign of the redelivery. Those may have been its beginning (seqs
    /// above all the client saw, after another device acknowledged the lower ones), which no later
    /// push would bring again.
    mutating func pongReceived(_ nonce: UInt64) -> Bool {
        guard let wait = redeliveryWait, wait.barrier == nonce else { return false }
        redeliveryWait = nil
        // While deferring, the Sync that ends the deferral brings them.
        return wait.dropped && !deferring
    }

    /// The client stopped: every consumer is gone and nothing is held.
    mutating func removeAll() {
        consumers.removeAll()
        seqs.removeAll()
        held.removeAll()
        heldBytes = 0
        redeliveryWait = nil
    }

    // MARK: Redelivery after a Sync

    /// A `Sync` sent on a link that is already receiving reliable pushes: the pushes the server
    /// wrote before it read the `Sync` still arrive after it, ahead of its redelivery. Delivered,
    /// they would overtake the pushes the client dropped (deferred, or not held) and wants back,
    /// which come only with the redelivery. So they are dropped too, unacknowledged, until the
    /// redelivery begins.
    ///
    /// The server sends one connection's reliable pushes in strictly increasing seq order, except
    /// that each `Sync` starts them again from the lowest unacknowledged seq. So a push whose seq
    /// is not above the one received before it on the link (or one of another epoch: numbering
    /// that started again) begins a redelivery, which brings, in order, everything sent before it
    /// that is still unacknowledged, so everything dropped. The redelivery may also begin above
    /// the last seq, when another connection of the principal acknowledged all the lower ones:
    /// then the `Pong` to the `Ping` sent right after the `Sync` (the server answers frames in
    /// order) ends the wait, and what was dropped meanwhile is asked for with one more `Sync`.
    struct RedeliveryWait: Equatable {
        /// The generation of the link the `Sync` went out on; pushes on other links pass.
        let link: UInt64
        /// The nonce of the `Ping` sent right after the `Sync`.
        let barrier: UInt64
        /// The seq space of the link's pushes (nil: none seen yet).
        var epoch: UInt64?
        /// The seq of the last reliable push received on the link (nil: none yet).
        var last: UInt64?
        /// A push was dropped while waiting.
        var dropped = false
    }

    /// True when `push` arrived on the waiting link from before the server read the `Sync`. A
    /// push that begins the redelivery ends the wait.
    private mutating func isStale(_ push: Push, on link: UInt64) -> Bool {
        guard var wait = redeliveryWait, wait.link == link else { return false }
        if let epoch = wait.epoch, epoch != push.epoch {
            redeliveryWait = nil
            return false
        }
        if let last = wait.last, push.seq <= last {
            redeliveryWait = nil
            return false
        }
        wait.epoch = push.epoch
        wait.last = push.seq
        redeliveryWait = wait
        return true
    }
}
