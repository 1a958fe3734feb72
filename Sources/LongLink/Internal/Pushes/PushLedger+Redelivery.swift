/// `Sync`: asking the server for every unacknowledged push again, and waiting for its redelivery.
extension PushLedger {
    /// A `Sync` is owed: on the synced link now, or once a link is logged in.
    mutating func wantSync() -> [Action] {
        guard let syncedLink else {
            syncWanted = true
            return []
        }
        return [.sync(link: syncedLink)]
    }

    /// A `Sync` went out on the logged-in link of generation `link`, followed by a `Ping` with
    /// nonce `barrier`: reliable pushes on that link are dropped until the redelivery begins.
    mutating func resyncSent(on link: UInt64, barrier: UInt64) {
        let space = links[link]
        resyncSent(on: link, epoch: space?.epoch, lastSeq: space?.lastSeq, barrier: barrier)
    }

    /// ``resyncSent(on:barrier:)`` with the seq space of the last reliable push received on the
    /// link given: `epoch` and `lastSeq` (nil: none yet).
    mutating func resyncSent(on link: UInt64, epoch: UInt64?, lastSeq: UInt64?, barrier: UInt64) {
        syncWanted = false
        // An earlier wait ends here: this Sync's redelivery brings what it dropped as well.
        redeliveryWait = RedeliveryWait(link: link, barrier: barrier, epoch: epoch, last: lastSeq)
        resyncDue = false
    }

    /// The `Pong` with `nonce` arrived. A `Sync` goes out again when it answered the wait's `Ping`
    /// and pushes were dropped with no sign of the redelivery: everything the server sent before
    /// it read the `Sync` has arrived, and what was dropped may have been the redelivery's
    /// beginning (seqs above all the client saw, after another device acknowledged the lower
    /// ones), which no later push would bring again.
    mutating func pongReceived(_ nonce: UInt64) -> [Action] {
        guard var wait = redeliveryWait, wait.barrier == nonce else { return [] }
        // While deferring, the Sync that ends the deferral brings them.
        if deferring {
            redeliveryWait = nil
            return []
        }
        if wait.dropped {
            redeliveryWait = nil
            return wantSync()
        }
        // Nothing arrived since the Sync, but pushes dropped before it are still owed: the server
        // may hold its redelivery back (one per interval), and a newer push offered meanwhile would
        // overtake them. The wait goes on; a newer push arriving now asks for one more Sync.
        guard dropsOwed else {
            redeliveryWait = nil
            return []
        }
        wait.answered = true
        redeliveryWait = wait
        return []
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
    /// Unless pushes were dropped before the `Sync`: a server may hold the redelivery back past
    /// the `Pong`, so the wait goes on, and a newer push arriving after it asks for one more `Sync`.
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
        /// The `Pong` to the wait's `Ping` arrived and the wait went on (``PushLedger/dropsOwed``).
        var answered = false
    }

    /// True when `push` arrived on the waiting link from before the server read the `Sync`. A
    /// push that begins the redelivery ends the wait.
    mutating func isStale(_ push: Push, on link: UInt64) -> Bool {
        guard var wait = redeliveryWait, wait.link == link else { return false }
        if let epoch = wait.epoch, epoch != push.epoch {
            redeliveryWait = nil
            dropsOwed = false
            return false
        }
        if let last = wait.last, push.seq <= last {
            redeliveryWait = nil
            dropsOwed = false
            return false
        }
        wait.epoch = push.epoch
        wait.last = push.seq
        if wait.answered {
            // A newer push after the Pong, the redelivery not begun: one more Sync, which a server
            // holding the first joins to it, and whose redelivery begins at or below this seq.
            wait.answered = false
            resyncDue = true
        }
        redeliveryWait = wait
        return true
    }
}
