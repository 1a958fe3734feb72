internal import LongLinkCore
internal import LongLinkTransport
internal import LongLinkWire
import Synchronization

/// Writes this server's sessions to a push store that shares presence (``PushStore/sharesPresence``):
/// each session as it begins and ends, and all of them again every third of the lease, so that
/// the sessions of a server that crashed leave the fleet's presence within the lease.
///
/// One writer at a time, in batches (``PresenceLedger``): a login flood costs a write per round
/// trip, not per login. A write that fails is counted in ``ServerStatistics/sharedStoreFailures``
/// and not repeated: the next renewal writes every live session again, and a removal that was
/// lost ends with its lease.
final class PresenceKeeper: Sendable {
    let store: any PushStore
    let serverID: String
    /// Tells this run of the server from another run, or another server, with the same id.
    let instance = String(UInt64.random(in: 0...UInt64.max), radix: 36)
    let lease: Duration
    private let counters: ServerCounters
    private let ledger = Locked(PresenceLedger())
    private let tasks = Locked(Tasks())

    private struct Tasks {
        var writer: Task<Void, Never>?
        var renewals: Task<Void, Never>?
    }

    init(store: any PushStore, serverID: String, lease: Duration, counters: ServerCounters) {
        self.store = store
        self.serverID = serverID
        self.lease = lease
        self.counters = counters
    }

    /// A connection was bound to `principal`.
    func began(_ principal: String, connectionID: UInt64) {
        let entry = PresenceLedger.Entry(principal: PrincipalKey(principal), connectionID: connectionID)
        if ledger.withLock({ $0.began(entry) }) { startWriting() }
    }

    /// A connection's session as `principal` ended.
    func ended(_ principal: String, connectionID: UInt64) {
        let entry = PresenceLedger.Entry(principal: PrincipalKey(principal), connectionID: connectionID)
        if ledger.withLock({ $0.ended(entry) }) { startWriting() }
    }

    /// Renews every live session each third of the lease, until ``halt()`` or ``finish()``.
    func startRenewals() {
        let interval = lease / 3
        let task = Task { [weak self] in
            while true {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                guard let self else { return }
                if ledger.withLock({ $0.renew() }) { startWriting() }
            }
        }
        tasks.withLock { $0.renewals = task }
    }

    /// Writes nothing more, as a crash would (``LongLinkServer/abort()``): the sessions written stay
    /// in the store until their lease passes, as a crashed server's do.
    func halt() {
        ledger.withLock { $0.halt() }
        tasks.withLock { $0.renewals }?.cancel()
    }

    /// After a graceful shutdown closed every connection: stops the renewals and waits until the
    /// sessions' removals are written, so that the fleet sees them end at once.
    func finish() async {
        let (renewals, writer) = tasks.withLock { ($0.renewals, $0.writer) }
        renewals?.cancel()
        await writer?.value
        ledger.withLock { $0.halt() }
    }

    private func startWriting() {
        let task = Task { await write() }
        tasks.withLock { $0.writer = task }
    }

    /// Writes batches until none is pending.
    private func write() async {
        while let batch = ledger.withLock({ $0.nextBatch() }) {
            let update = PresenceUpdate(
                serverID: serverID, instance: instance, lease: lease, present: batch.present.map(\.session),
                absent: batch.absent.map(\.session))
            do throws(LongLinkError) {
                try await store.updatePresence(update)
            } catch {
                // A store closed under a halted keeper (a crash) is no failure.
                if error.code != .shutdown { counters.sharedStoreFailures.increment() }
            }
        }
    }
}
