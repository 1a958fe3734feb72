internal import LongLinkTransport

/// The observers of a push store in this process (``InMemoryPushStore``, ``LocalPushStore``): told
/// on the caller's thread as things happen, so no notice is ever lost and nothing needs refreshing.
final class PushObservers: Sendable {
    private let observers = Locked<[SharedPushObserver]>([])

    func add(_ observer: SharedPushObserver) {
        observers.withLock { $0.append(observer) }
    }

    /// Stops reporting (the server that observed shuts down; the pushes stay for the next one).
    func removeAll() {
        observers.withLock { $0.removeAll() }
    }

    func pushStored(principal: String) {
        for observer in observers.withLock({ $0 }) where observer.isWatching(principal) {
            observer.pushStored(principal)
        }
    }

    /// Every observer hears of an exclusive login, the announcing server's too, as from a shared store.
    func sessionStarted(principal: String, clientID: String) {
        for observer in observers.withLock({ $0 }) { observer.sessionStarted(principal, clientID) }
    }
}

/// An application's ``PushStore`` behind the ``SharedPushStore`` interface the server speaks: its
/// calls answered at once, its observation kept in this process.
struct LocalPushStore: PushStore, SharedPushStore {
    let base: any PushStore
    private let observers = PushObservers()

    init(_ base: any PushStore) {
        self.base = base
    }

    func append(principal: String, topic: String, payload: [UInt8]) throws(LongLinkError) -> StoredPush {
        let push = try base.append(principal: principal, topic: topic, payload: payload)
        observers.pushStored(principal: principal)
        return push
    }

    func unacknowledged(principal: String, after seq: UInt64, limit: Int) -> [StoredPush] {
        base.unacknowledged(principal: principal, after: seq, limit: limit)
    }

    func acknowledge(principal: String, seqs: [UInt64]) {
        base.acknowledge(principal: principal, seqs: seqs)
    }

    func acknowledge(principal: String, seqs: [UInt64], epoch: UInt64) {
        base.acknowledge(principal: principal, seqs: seqs, epoch: epoch)
    }

    func unacknowledgedCount(principal: String) -> Int {
        base.unacknowledgedCount(principal: principal)
    }

    func startObserving(_ observer: SharedPushObserver) {
        observers.add(observer)
    }

    func refreshObservation(of principal: String) {}

    func announceSession(principal: String, clientID: String) {
        observers.sessionStarted(principal: principal, clientID: clientID)
    }

    func shutdown() {
        observers.removeAll()
    }
}
