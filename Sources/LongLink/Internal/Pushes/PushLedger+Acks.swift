/// The links' seq spaces and the acks owed: batched, then sent on the link whose seq space they
/// belong to (the current link, or a retiring one still answering), or kept, bounded, until a link
/// can take them. The one place that decides which link may carry an ack.
extension PushLedger {
    /// What the ledger knows of one open link.
    struct LinkSeqSpace: Equatable {
        /// The epoch of the last reliable push received there: the seq space its acks are for.
        var epoch: UInt64?
        /// The seq of the last reliable push received there (of `epoch`).
        var lastSeq: UInt64?
        /// Acks may go out there (false once the client said `GoAway` on it).
        var takesAcks = true
    }

    /// The most acks kept waiting (for a link to tell its epoch, or to become writable). Dropping
    /// one loses nothing: the server redelivers the push and it is acknowledged again.
    static var awaitingLimit: Int { 65_536 }

    // MARK: Link events

    /// A link of generation `link` is up (the first, a reconnection's, or a migration's successor).
    mutating func linkAttached(_ link: UInt64) {
        links[link] = LinkSeqSpace()
    }

    /// The login `Sync` went out on `link`, now the current link: no push was sent on it before, so
    /// no redelivery is awaited; the acks of the batch go out. A link that was current before
    /// keeps taking the acks of its own seq space while it retires.
    mutating func loginSynced(_ link: UInt64) -> [Action] {
        if links[link] == nil { links[link] = LinkSeqSpace() }
        syncedLink = link
        syncWanted = false
        redeliveryWait = nil
        resyncDue = false
        // The login's Sync brings everything unacknowledged on a link that had no push before it.
        dropsOwed = false
        return flushAcks()
    }

    /// The client said `GoAway` on `link`: no ack goes there any more.
    mutating func linkGoingAway(_ link: UInt64) {
        links[link]?.takesAcks = false
    }

    /// `link` closed. Acks owed for its seq space wait for the next link to tell its own.
    mutating func linkClosed(_ link: UInt64) {
        links[link] = nil
        if syncedLink == link { syncedLink = nil }
    }

    /// The server read enough of what was written on `link`: acks kept for it go out.
    mutating func linkWritable(_ link: UInt64) -> [Action] {
        guard let epoch = links[link]?.epoch else { return [] }
        return releaseAwaiting(epoch: epoch)
    }

    /// A reliable push on `link` tells its seq space; acks waiting for that seq space go out.
    mutating func positioned(_ push: Push, on link: UInt64) -> [Action] {
        guard var space = links[link] else { return [] }
        let newEpoch = space.epoch != push.epoch
        space.epoch = push.epoch
        space.lastSeq = push.seq
        links[link] = space
        return newEpoch ? releaseAwaiting(epoch: push.epoch) : []
    }

    // MARK: Acks

    /// The app has `key`: acknowledge it with the next batch.
    mutating func owe(_ key: PushKey) -> [Action] {
        batch.append(key)
        if batch.count >= maxBatch { return flushAcks() }
        guard batch.count == 1, !ackTimerArmed else { return [] }
        ackTimerArmed = true
        return [.armAckTimer]
    }

    /// The batch's timer fired.
    mutating func ackTimerFired() -> [Action] {
        ackTimerArmed = false
        return route(takeBatch())
    }

    /// Sends the batch now (a login, a shutdown's last words).
    mutating func flushAcks() -> [Action] {
        var actions: [Action] = []
        if ackTimerArmed {
            ackTimerArmed = false
            actions.append(.cancelAckTimer)
        }
        return actions + route(takeBatch())
    }

    /// Acks of an ``Action/ack(link:epoch:seqs:)`` that the link could not take (its write buffer
    /// is full): kept until a link of that seq space is writable.
    mutating func ackBlocked(epoch: UInt64, seqs: [UInt64]) {
        keepAwaiting(seqs.map { PushKey(epoch: epoch, seq: $0) })
    }

    private mutating func takeBatch() -> [PushKey] {
        defer { batch.removeAll(keepingCapacity: true) }
        return batch
    }

    private mutating func keepAwaiting(_ keys: [PushKey]) {
        awaiting.append(contentsOf: keys)
        let excess = awaiting.count - Self.awaitingLimit
        if excess > 0 { awaiting.removeFirst(excess) }
    }

    /// Acks waiting for a link of `epoch`: those of that seq space are owed again (with the next
    /// batch); the others are routed once more, which drops those of no link's seq space.
    private mutating func releaseAwaiting(epoch: UInt64) -> [Action] {
        guard !awaiting.isEmpty else { return [] }
        let waiting = awaiting
        awaiting = []
        var actions: [Action] = []
        var others: [PushKey] = []
        for key in waiting {
            if key.epoch == epoch { actions += owe(key) } else { others.append(key) }
        }
        return actions + route(others)
    }

    /// Which link carries each ack: a retiring (or successor) link whose seq space it is, when that
    /// is not the current link's; else the synced current link once it told its seq space (an ack
    /// of another seq space there is stale: its seq means another push); else it waits.
    private mutating func route(_ keys: [PushKey]) -> [Action] {
        guard !keys.isEmpty else { return [] }
        let currentEpoch = syncedLink.flatMap { links[$0]?.epoch }
        var byLink: [UInt64: [PushKey]] = [:]
        var waiting: [PushKey] = []
        for key in keys {
            if key.epoch != currentEpoch, let other = linkTakingAcks(of: key.epoch) {
                byLink[other, default: []].append(key)
            } else if let syncedLink, let currentEpoch {
                if key.epoch == currentEpoch {
                    byLink[syncedLink, default: []].append(key)
                } else {
                    staleAcksDropped += 1
                }
            } else {
                waiting.append(key)
            }
        }
        keepAwaiting(waiting)
        return byLink.keys.sorted().map { link in
            let keys = byLink[link]!
            return .ack(link: link, epoch: keys[0].epoch, seqs: keys.map(\.seq))
        }
    }

    /// The oldest link other than the current one that takes acks of `epoch`.
    private func linkTakingAcks(of epoch: UInt64) -> UInt64? {
        links.filter { $0.key != syncedLink && $0.value.takesAcks && $0.value.epoch == epoch }.keys.min()
    }
}
