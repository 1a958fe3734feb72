/// The client's one record of pushes, from arrival to acknowledgement: which consumers get one,
/// which are duplicates, what is held while nobody listens, each link's seq space (epoch and last
/// seq), the acks owed (batched, per link, or waiting for an epoch or a writable link), and when to
/// ask for `Sync` and wait for its redelivery.
///
/// A plain value: each method is an event and returns the ``Action``s the core performs; the core
/// owns the consumers' buffers (the only other holders of a push), the sockets and the ack timer.
/// It is the one registry of consumers (`consumers`, by the topics they want): generic over the
/// consumer, so that the client keeps its buffers here and tests use plain values.
/// Every reliable push the client holds and the app has not fully taken has one entry in `seqs`,
/// keyed by (epoch, seq); seqs the app has taken are in `delivered`, one de-duplicator per epoch
/// for the few most recent epochs. Facets: `+Acks` (links and acks), `+Redelivery` (`Sync`).
struct PushLedger<Consumer> {
    enum Action: Equatable {
        /// Send `Ack`s of `epoch` for `seqs` on the link of generation `link`. When that link
        /// cannot take writes now, hand them back with ``ackBlocked(epoch:seqs:)``.
        case ack(link: UInt64, epoch: UInt64, seqs: [UInt64])
        /// The first ack of a batch waits: call ``ackTimerFired()`` after the ack delay.
        case armAckTimer
        /// The batch went out before its timer fired.
        case cancelAckTimer
        /// Send `Sync` and a `Ping` on the link of generation `link`, then report with
        /// ``resyncSent(on:barrier:)``.
        case sync(link: UInt64)
    }

    /// Where one reliable seq is, from its arrival until every consumer that got it took it.
    enum SeqState: Equatable {
        /// No consumer for its topic yet: held here, in arrival order.
        case held
        /// In `holders` consumers' buffers; `taken` once one of them handed it to the app.
        case buffered(holders: Int, taken: Bool)
    }

    /// Every consumer, by the topics it wants.
    private(set) var consumers = TopicIndex<Consumer>()
    private(set) var seqs: [PushKey: SeqState] = [:]
    private(set) var held: [Push] = []
    /// The payload bytes of `held`.
    private(set) var heldBytes = 0
    /// The de-duplicators of the most recent epochs, in the order they were first seen.
    private(set) var delivered: [(epoch: UInt64, seqs: PushDeduplicator)] = []
    /// A consumer was full: reliable pushes are refused (the server keeps them) until it catches up.
    private(set) var deferring = false
    /// A `Sync` is owed as soon as the link allows it.
    var syncWanted = false
    /// A `Sync` went out on a link already receiving reliable pushes, and its redelivery has not
    /// begun yet (see ``RedeliveryWait``).
    var redeliveryWait: RedeliveryWait?
    /// A reliable push was dropped (deferred, not held, handed back) since the last redelivery
    /// began: a later one may not be offered before the next redelivery brings it.
    var dropsOwed = false
    /// A stale push arrived after the wait's `Pong`: the next action is one more `Sync`.
    var resyncDue = false
    let holdLimit: Int
    /// The most payload bytes held; a push always fits when nothing is held.
    let holdByteLimit: Int

    // Links and acks (see `+Acks`).

    /// The open links' seq spaces, by generation.
    var links: [UInt64: LinkSeqSpace] = [:]
    /// The current link once its login `Sync` went out: new acks and `Sync`s go there.
    var syncedLink: UInt64?
    /// Acks owed, waiting for the batch to fill or its timer.
    var batch: [PushKey] = []
    var ackTimerArmed = false
    /// Acks that could go nowhere yet: for pushes of an earlier link, until the current one tells
    /// its seq space; or for a link whose write buffer is full, until the server reads.
    var awaiting: [PushKey] = []
    /// Acks dropped because their seq space is no link's any more.
    var staleAcksDropped = 0
    /// The most acks in one batch.
    let maxBatch: Int

    /// Epochs remembered: a client that moves between servers with different stores (and back)
    /// still drops the repeats of the last few.
    static var epochLimit: Int { 4 }

    init(holdLimit: Int, holdByteLimit: Int = .max, maxBatch: Int = 256) {
        self.holdLimit = holdLimit
        self.holdByteLimit = holdByteLimit
        self.maxBatch = max(1, maxBatch)
    }

    /// True when the app has taken `key` before.
    func wasDelivered(_ key: PushKey) -> Bool {
        delivered.last(where: { $0.epoch == key.epoch })?.seqs.wasDelivered(key.seq) ?? false
    }

    mutating func markDelivered(_ key: PushKey) {
        if let index = delivered.lastIndex(where: { $0.epoch == key.epoch }) {
            delivered[index].seqs.markDelivered(key.seq)
            return
        }
        var seqs = PushDeduplicator()
        seqs.markDelivered(key.seq)
        delivered.append((key.epoch, seqs))
        if delivered.count > Self.epochLimit { delivered.removeFirst() }
    }

    /// True when some consumer takes `push`.
    func hasConsumer(for push: Push) -> Bool {
        consumers.contains(taking: push)
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

    struct Received: Equatable {
        var delivery: ReceiveAction
        /// Acks this push lets go out (it told a link's seq space, or is acknowledged again).
        var actions: [Action] = []
    }

    /// A push arrived on the link of generation `link`. `wanted`: whether some consumer takes it,
    /// when the caller looked its consumers up already (nil: the ledger looks).
    mutating func received(_ push: Push, on link: UInt64 = 0, wanted: Bool? = nil) -> Received {
        var actions = push.isReliable ? positioned(push, on: link) : []
        let delivery = deliveryOf(push, on: link, wanted: wanted ?? hasConsumer(for: push))
        if delivery == .ackAgain { actions += owe(push.key) }
        if delivery == .dropDeferred { dropsOwed = true }
        if resyncDue {
            resyncDue = false
            // While deferring, the Sync that ends the deferral brings them.
            if !deferring { actions += wantSync() }
        }
        return Received(delivery: delivery, actions: actions)
    }

    private mutating func deliveryOf(_ push: Push, on link: UInt64, wanted: Bool) -> ReceiveAction {
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
        if push.isReliable, accepted == 0 { dropsOwed = true }
        guard push.isReliable, refused, !deferring else { return false }
        deferring = true
        return true
    }

    /// A consumer handed `taken` to the app. `caughtUp` when every consumer's buffer is below half
    /// full (deferring may end, and a `Sync` asks the server for what it kept).
    mutating func taken(_ taken: [PushKey], caughtUp: Bool) -> [Action] {
        var actions: [Action] = []
        for key in taken {
            guard case .buffered(let holders, _) = seqs[key] else { continue }
            if holders > 1 {
                seqs[key] = .buffered(holders: holders - 1, taken: true)
            } else {
                seqs[key] = nil
                markDelivered(key)
                actions += owe(key)
            }
        }
        if deferring, caughtUp {
            deferring = false
            actions += wantSync()
        }
        return actions
    }

    struct ConsumerAdded: Equatable {
        /// Held pushes for it, in order: offer them, then report each with ``offered(_:accepted:refused:)``.
        var pushes: [Push] = []
        /// A `Sync` owed for pushes nobody could take before.
        var actions: [Action] = []
    }

    /// Registers `consumer` as `id`, taking the pushes of `filter`.
    mutating func consumerAdded(_ consumer: Consumer, id: UInt64, filter: TopicFilter) -> ConsumerAdded {
        consumers.insert(consumer, id: id, filter: filter)
        var added = ConsumerAdded()
        held.removeAll { push in
            guard filter.takes(push) else { return false }
            added.pushes.append(push)
            heldBytes -= push.payload.count
            seqs[push.key] = nil
            return true
        }
        if syncWanted { added.actions = wantSync() }
        return added
    }

    /// A consumer left; `untaken` are the reliable pushes in its buffer that it never handed over.
    /// Those the remaining consumers all took are acknowledged; the others are asked for again
    /// when a consumer that wants them is registered, else a `Sync` is owed until one arrives.
    mutating func consumerRemoved(_ id: UInt64, untaken: [Push]) -> [Action] {
        guard removeConsumer(id) != nil else { return [] }
        return consumerLeft(untaken: untaken)
    }

    /// Takes consumer `id` out of the registry (the first half of ``consumerRemoved(_:untaken:)``,
    /// for a caller that collects what it took in between).
    mutating func removeConsumer(_ id: UInt64) -> Consumer? {
        consumers.remove(id)
    }

    /// The second half of ``consumerRemoved(_:untaken:)``: a consumer taken out of the registry
    /// left `untaken` in its buffer.
    mutating func consumerLeft(untaken: [Push]) -> [Action] {
        var actions: [Action] = []
        var lost: [Push] = []
        for push in untaken {
            switch dropHolder(of: push.key) {
            case .stillHeld: break
            case .delivered: actions += owe(push.key)
            case .lost: lost.append(push)
            }
        }
        guard !lost.isEmpty else { return actions }
        dropsOwed = true
        if lost.contains(where: { hasConsumer(for: $0) }) {
            actions += wantSync()
        } else {
            syncWanted = true
        }
        return actions
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
    /// not decode and nobody was there to see it): acknowledged when the other consumers that got
    /// it took it. Otherwise it is the server's again, and comes back with a later `Sync`; none is
    /// asked for now, since the same consumer would let it go again.
    mutating func released(_ push: Push) -> [Action] {
        guard push.isReliable else { return [] }
        guard dropHolder(of: push.key) == .delivered else {
            dropsOwed = true
            return []
        }
        return owe(push.key)
    }

    /// The session ended (a logout, a kick, a rejected login) or the client stopped: the ledger
    /// starts again as new. Every consumer is gone and nothing is held; and nothing of the last
    /// user's push state survives to shape the next user's: not a deferral (a consumer of the old
    /// session that was behind would hold every push of the next one back), not the delivered
    /// seqs (with a server that sends epoch 0, the next user's seqs of the same numbers would be
    /// taken for repeats), not the acks owed, a wanted `Sync` or the links' seq spaces. Only the
    /// count of stale acks, a statistic of the client's life, is kept. The caller cancels the
    /// ack timer.
    mutating func removeAll() {
        var fresh = PushLedger(holdLimit: holdLimit, holdByteLimit: holdByteLimit, maxBatch: maxBatch)
        fresh.staleAcksDropped = staleAcksDropped
        self = fresh
    }
}
